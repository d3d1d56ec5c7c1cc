"""One warm zygote and prefork server per host (instructor.host): the host's grading processes share them, they
outlive the process that started them, and only a process of the grader's own uid is answered or believed."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading

import pytest

from grader.capabilities import scan
from grader.paths import REPO, SOLUTION_FILE
from instructor import host
from instructor.warm import zygote

needs_zygote = pytest.mark.skipif(not zygote.available(), reason="needs root, namespaces and pidfds (CI has them)")

GRADING_PROCESS = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from instructor import gradebook, host
    from instructor.cluster import Job, grade_job

    if sys.argv[3:] == ["behind-the-scan"]:  # a test of the walls behind the syntax scan
        graded_as_is, gradebook.grade_folder = gradebook.grade_folder, (
            lambda *args, **kwargs: graded_as_is(*args, **{**kwargs, "syntax_scan": lambda source: []}))
    job = Job("ada", Path(sys.argv[2]).read_bytes())
    for line in sys.stdin:  # one grade per line
        _, report, _ = grade_job(job, "public", 120.0)
        print(json.dumps({"started_here": host.shared().started_here, "score": report.score,
                          "max": report.max_score}), flush=True)
''')


class GradingProcess:
    """A process like a Dask worker on this host: it grades the reference each time it is asked."""

    def __init__(self, source, behind_the_scan=False):
        self.process = subprocess.Popen([sys.executable, "-c", GRADING_PROCESS, str(REPO), str(source),
                                         *(["behind-the-scan"] if behind_the_scan else [])],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)

    def grade(self):
        self.process.stdin.write("grade\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def kill(self):
        self.process.kill()
        self.process.wait()


@pytest.fixture
def processes():
    started = []
    yield lambda: started.append(GradingProcess(SOLUTION_FILE)) or started[-1]
    for each in started:
        each.kill()


@needs_zygote
def test_the_second_process_on_a_host_grades_with_the_first_ones_servers(processes):
    first, second = processes(), processes()
    assert first.grade()["started_here"]
    graded = second.grade()
    assert not graded["started_here"]
    assert graded["score"] == graded["max"] > 0


@needs_zygote
def test_the_servers_outlive_the_process_that_started_them(processes):
    first, second = processes(), processes()
    first.grade()
    second.grade()
    first.kill()
    graded = second.grade()
    assert graded["score"] == graded["max"] > 0
    assert processes().grade()["started_here"]  # the name went with its holder: the next process starts anew


@needs_zygote
def test_a_process_whose_servers_died_grades_the_student_again_with_new_ones(processes):
    only = processes()
    only.grade()
    for pid in _servers_of(only.process.pid):
        os.kill(pid, signal.SIGKILL)
    graded = only.grade()
    assert graded["started_here"] and graded["score"] == graded["max"] > 0


@pytest.fixture
def private_name(monkeypatch):
    name = b"\0grader-host-test-" + os.urandom(8).hex().encode()
    monkeypatch.setattr(host, "socket_name", lambda: name)
    return name


def test_the_starter_answers_no_process_of_another_uid(private_name, monkeypatch, tmp_path):
    listener = host._bind()
    assert listener is not None
    monkeypatch.setattr(host, "peer_uid", lambda connection: os.geteuid() + 1)
    threading.Thread(target=host._answer, args=(listener, host.HostServers(str(tmp_path))), daemon=True).start()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stranger:
        stranger.connect(private_name)
        stranger.settimeout(10)
        assert stranger.recv(65536) == b""  # closed without a word


def test_a_process_believes_no_starter_of_another_uid(private_name, monkeypatch, tmp_path):
    impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    impostor.bind(private_name)
    impostor.listen()

    def offer():
        connection, _ = impostor.accept()
        with connection, open(os.devnull) as bait, contextlib.suppress(OSError):
            socket.send_fds(connection, [json.dumps({"tasks": str(tmp_path), "servers": ["prefork"]}).encode()],
                            [bait.fileno()])

    offering = threading.Thread(target=offer, daemon=True)
    offering.start()
    monkeypatch.setattr(host, "peer_uid", lambda connection: os.geteuid() + 1)
    monkeypatch.setattr(host, "start_servers", lambda hide: [])
    started = host._attach_or_start()  # refused at once: no retries against an impostor
    assert started.started_here and started.servers == [] and started.listener is None
    offering.join(10)
    impostor.close()


def test_a_process_that_finds_the_name_taken_and_silent_starts_its_own(private_name, monkeypatch):
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squatter.bind(private_name)  # bound, never listening: connecting is refused, binding fails
    monkeypatch.setattr(host, "BIND_ATTEMPTS", 3)
    monkeypatch.setattr(host, "start_servers", lambda hide: [])
    started = host._attach_or_start()
    assert started.started_here and started.servers == []
    squatter.close()


def test_the_name_is_the_checkouts_and_abstract():
    name = host.socket_name()
    assert name.startswith(b"\0grader-host-") and name == host.socket_name()


@needs_zygote
def test_a_submission_cannot_reach_the_hosts_socket(tmp_path):
    """The name exists in the host's network namespace; a student's worker has its own. The scan refuses the
    socket module first today: this is the namespace behind it."""
    reach = textwrap.dedent(f'''
        import socket as _socket
        _probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            _probe.connect({host.socket_name()!r})
        except OSError:
            pass
        else:
            raise SystemExit("reached the host's grading socket")
    ''')
    source = tmp_path / "attention.py"
    source.write_text(reach + SOLUTION_FILE.read_text())
    assert scan(source.read_bytes())
    mallory = GradingProcess(source, behind_the_scan=True)
    try:
        graded = mallory.grade()  # mallory's process holds the name while her submission runs
    finally:
        mallory.kill()
    assert graded["started_here"] and graded["score"] == graded["max"] > 0


@needs_zygote
def test_killing_a_grading_process_leaves_no_server_behind(processes):
    """Once every process using them has ended, the servers end too (their last channel closes)."""
    only = processes()
    only.grade()
    servers = _servers_of(only.process.pid)
    only.kill()
    for pid in servers:
        _wait_gone(pid)


def _servers_of(pid):
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    assert children, "the grading process started no server"
    return [int(child) for child in children]


def _wait_gone(pid, timeout=10.0):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{pid}/stat") as stat:
            if stat.read().split(") ")[1].startswith("Z"):
                return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    pytest.fail(f"server {pid} still runs after its last user ended")
