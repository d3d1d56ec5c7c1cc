"""Workers forked from the zygote (instructor.warm.zygote): the sandbox of a fresh worker, and nothing one student's
worker does reaches the zygote or another student's worker."""

import contextlib
import os
import signal
import textwrap
import time
from pathlib import Path

import pytest

from grader.paths import REPO
from grader.run import child_env
from grader.sandbox import cgroups, slots
from grader.sandbox.errors import SubmissionCrashed, SubmissionTimeout
from grader.sandbox.policy import Limits
from grader.sandbox.proxy import Submission
from grader.sandbox.spawn import KEPT_VARIABLES
from instructor.warm import pair, zygote
from tests.tooling.test_sandbox import PROBE, assert_only_the_allow_list, processes_of

pytestmark = pytest.mark.skipif(not zygote.available(), reason="needs root, namespaces and pidfds (CI has them)")

ATTACKS = textwrap.dedent('''
    import os

    def kill_everything():
        os.kill(-1, 9)

    def loop_forever():
        while True:
            pass
''')


@contextlib.contextmanager
def started_zygote(hide):
    """A zygote as batch starts it: with a prefork server, from one Python (instructor.warm.pair)."""
    started, prefork = pair.start(hide, child_env())
    with prefork, started:
        yield started, prefork


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    with started_zygote([root]) as (started, _):
        yield started, root


def student(classroom, name, source, call_timeout=None):
    """A Submission whose worker the zygote forked, on source saved as name's attention.py."""
    started, root = classroom
    folder = root / name
    folder.mkdir()
    (folder / "attention.py").write_text(source)
    with open(folder / "worker.log", "ab") as log:
        worker, sock = started.spawn(folder / "attention.py", log)
    limits = Limits(call_seconds=call_timeout) if call_timeout else Limits()
    submission = Submission(folder / "attention.py", limits=limits, log_path=str(folder / "worker.log"))
    submission.adopt(sock.detach(), worker.pid)
    return submission, worker


def end(submission, worker):
    submission.stop()
    worker.kill()
    worker.wait()


def test_a_forked_worker_has_its_own_uid_home_and_process_namespace(classroom):
    submission, worker = student(classroom, "ada", PROBE)
    uid, gid, cwd, home, isolated = submission.identity()
    assert slots.FIRST_UID <= uid < slots.FIRST_UID + slots.SLOTS and gid == uid
    assert cwd == home and isolated == 1
    assert submission.visible_pids() == sorted({1, submission.own_pid()})
    assert submission.signal_init() == "PermissionError"
    end(submission, worker)


def test_a_forked_worker_sees_exactly_the_allow_list_and_filter_of_a_plain_start(classroom):
    submission, worker = student(classroom, "gil", PROBE)
    try:
        assert_only_the_allow_list(submission)
        assert submission.seccomp_status()["Seccomp"] == "2"  # the same boot: the same filter
    finally:
        end(submission, worker)


def test_a_forked_worker_sees_no_class_folder_tests_solutions_or_network(classroom):
    submission, worker = student(classroom, "bob", PROBE)
    _, root = classroom
    assert submission.listing(str(root)) in ([], None)
    assert submission.listing(str(REPO / "tests")) in ([], None)
    assert submission.listing(str(REPO / "solutions")) in ([], None)
    assert submission.connect("127.0.0.1", 22) != "connected"
    assert not submission.can_write("/tmp/x")
    end(submission, worker)


def test_a_file_one_student_writes_is_not_in_the_next_students_scratch(classroom):
    first, first_worker = student(classroom, "cy", PROBE)
    home = first.identity()[3]
    assert first.can_write(f"{home}/left-behind.txt")
    end(first, first_worker)
    second, second_worker = student(classroom, "dee", PROBE)
    assert second.identity()[3] == home
    assert second.listing(home) == []
    end(second, second_worker)


def test_a_crash_at_import_leaves_the_zygote_forking_the_next_student(classroom):
    crashed, crashed_worker = student(classroom, "eve", "import os\nos._exit(3)\n")
    with pytest.raises(SubmissionCrashed):
        crashed.identity()
    end(crashed, crashed_worker)
    honest, honest_worker = student(classroom, "fay", PROBE)
    assert honest.own_pid() == 2
    end(honest, honest_worker)


def test_a_worker_can_signal_neither_the_zygote_nor_a_classmate(classroom):
    classmate, classmate_worker = student(classroom, "gus", PROBE)
    assert classmate.own_pid() == 2
    attacker, attacker_worker = student(classroom, "hal", ATTACKS)
    with pytest.raises(ProcessLookupError):  # kill(-1) found no process it may signal
        attacker.kill_everything()
    assert classmate.own_pid() == 2
    end(attacker, attacker_worker)
    end(classmate, classmate_worker)
    after, after_worker = student(classroom, "ivy", PROBE)  # the zygote lives on: it forks the next one
    assert after.own_pid() == 2
    end(after, after_worker)


def test_a_hung_worker_is_stopped_and_leaves_no_process_of_its_uid(classroom):
    hung, hung_worker = student(classroom, "jo", PROBE + ATTACKS,
                                call_timeout=1.0)
    uid = hung.identity()[0]
    processes = processes_of(uid)
    groups = {path: path.stat().st_ino for path in cgroups.ROOT.glob(f"**/grader-sandbox-{uid}")}
    with pytest.raises(SubmissionTimeout):
        hung.loop_forever()
    end(hung, hung_worker)
    # what was its: a grade beside this test may take the freed uid at once (test_sandbox)
    assert processes and not processes & processes_of(uid)
    assert not [path for path, inode in groups.items() if path.exists() and path.stat().st_ino == inode]


def test_the_zygote_inherits_no_key_report_channel_or_worker_socket(tmp_path, monkeypatch):
    """The zygote grows from the Python that becomes the prefork server (instructor.warm.pair): it holds the
    workers' environment and its own channel, and nothing of the grader's or the prefork server's."""
    for name in ("GRADER_KEY_FD", "GRADER_REPORT_FD", "GRADER_WORKER_FD", "GRADER_WORKER_PID"):
        monkeypatch.setenv(name, "7")
    with started_zygote([tmp_path]) as (started, prefork):
        (tmp_path / "attention.py").write_text(PROBE)
        with open(tmp_path / "worker.log", "ab") as log:
            worker, sock = started.spawn(tmp_path / "attention.py", log)  # answered: the zygote is up
        pid = zygote_pid(prefork)
        environment = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        held = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        sock.close()
        worker.kill()
        worker.wait()
    names = {item.split(b"=", 1)[0].decode() for item in environment if item}
    assert names <= {*KEPT_VARIABLES, "PYTHONDONTWRITEBYTECODE", "PATH", "HOME", "TMPDIR"}, names
    # its channel, and for a moment the pidfd of a child it forked, which it sends to the client
    assert [target for fd, target in held.items() if fd > 2 and target != "anon_inode:[pidfd]"
            and not target.startswith("socket:")] == []
    assert len([fd for fd, target in held.items() if target.startswith("socket:")]) == 1
    assert os.environ["GRADER_KEY_FD"] == "7"


SPINS_IN_SDPA = '''
def scaled_dot_product_attention(*args, **kwargs):
    for _ in range(10 ** 9):
        pass
'''


def test_a_zygote_that_ends_mid_grade_is_a_grader_error_not_a_crash_of_the_students(tmp_path):
    """Its workers end with it, mid-call: the student's code did not crash, so no test is failed for it; the
    run is the grader's error, which batch grades again."""
    import threading

    from grader.grade import grade
    from grader.run import GraderError
    from grader.sandbox.policy import Limits
    from instructor.warm import warm_launcher
    from tests.tooling.misbehaving import REFERENCE, at_import
    from tests.tooling.small_checkout import small_tests, task_files

    (tmp_path / "class" / "spins").mkdir(parents=True)
    (tmp_path / "class" / "spins" / "attention.py").write_text(at_import(REFERENCE, SPINS_IN_SDPA))
    tests = small_tests(tmp_path / "tests", task_files(("sdpa",)))
    with warm_launcher([str(tmp_path)]) as launcher:
        threading.Thread(target=kill_once_a_worker_spins, args=(zygote_pid(launcher.prefork),), daemon=True).start()
        with pytest.raises(GraderError, match="ended while running scaled_dot_product_attention"):
            grade(tmp_path / "class" / "spins", "public", tests_dir=tests, launcher=launcher, partial=True,
                  syntax_scan=lambda source: [], limits=Limits(call_seconds=30.0))


def kill_once_a_worker_spins(zygote: int, seconds: float = 120.0) -> None:
    """SIGKILL the zygote once a process it forked has used a CPU-second (the loop in sdpa runs)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pending, cpu = [zygote], []
        while pending:
            pid = pending.pop()
            with contextlib.suppress(OSError):
                pending += children_of(pid)
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                cpu.append((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if pid != zygote else 0)
        if max(cpu, default=0) >= 1.0:
            os.kill(zygote, signal.SIGKILL)
            return
        time.sleep(0.1)


def zygote_in(pid: int) -> int | None:
    """The zygote, if pid is the process that made its namespaces: its child in another PID namespace."""
    with contextlib.suppress(OSError):  # a process that ended meanwhile
        for child in children_of(pid):
            if os.readlink(f"/proc/{child}/ns/pid") != os.readlink(f"/proc/{pid}/ns/pid"):
                return child
    return None


def children_of(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def zygote_pid(prefork, seconds: float = 30.0) -> int:
    """The zygote's pid here, once the pair has forked it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [pid for pid in map(zygote_in, children_of(prefork.process.pid)) if pid is not None]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError("the pair forked no zygote")


def test_batch_through_the_zygote_and_the_prefork_server_grades_as_a_plain_grade(tmp_path, reference_public,
                                                                                    stubs_public):
    from instructor.batch import run_batch

    sources = {"ref": REPO / "solutions" / "attention.py", "stub": REPO / "assignment" / "attention.py"}
    for name, source in sources.items():
        (tmp_path / "class" / name).mkdir(parents=True)
        (tmp_path / "class" / name / "attention.py").write_bytes(source.read_bytes())
    reports = run_batch(tmp_path / "class", "public", jobs=2, output=tmp_path / "grades.csv", progress=False)
    for name, plain in (("ref", reference_public), ("stub", stubs_public)):  # grade() with the plain launcher
        assert reports[name].failure is None, f"{name}: {reports[name].failure}"
        assert [(t.id, t.status, t.score) for t in reports[name].tests] == \
            [(t.id, t.status, t.score) for t in plain.tests]


def test_a_worker_dies_with_the_channel_it_was_forked_for_and_the_zygote_serves_on(classroom, tmp_path):
    """A Dask worker process that dies mid-grade closes its channel to the host's shared zygote: its
    student's worker is killed even if it ignores its own socket, and the other channels are served as before."""
    started, _ = classroom
    other = zygote.Zygote.attached(started.channel.attach())
    (tmp_path / "attention.py").write_text(PROBE)
    with open(tmp_path / "worker.log", "ab") as log:
        orphan, orphan_sock = other.spawn(tmp_path / "attention.py", log)
    assert orphan.poll() is None
    other.close()  # its sockets to the worker stay open: only the channel ends
    deadline = time.monotonic() + 10
    while orphan.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert orphan.poll() is not None, "the worker outlived the channel it was forked for"
    orphan_sock.close()
    orphan.wait()
    served, served_worker = student(classroom, "after-an-orphan", PROBE)
    assert served.identity()[0] != os.geteuid()
    end(served, served_worker)


RESTARTED = '''
import os as _os
import sys as _sys

def scaled_dot_product_attention(*args, **kwargs):
    _os._exit(3)

def attention_weights(*args, **kwargs):
    raise ValueError(f"this worker's argv[0] is {_sys.argv[0]!r}")
'''


def test_a_batch_restarts_a_crashed_worker_from_its_zygote(tmp_path):
    """After a crash the pytest child forked by the prefork server asks the batch's zygote for the next worker
    (a new Python would import torch again): the workers that run attention_weights after sdpa's crashes are forks
    of the zygote (its command line, not a plain start's boot_script.py). A crash names no exit status: the
    zygote's child ends by SIGKILL whatever the code did (here os._exit(3))."""
    from grader.grade import grade
    from instructor.warm import warm_launcher
    from tests.tooling.misbehaving import REFERENCE, at_import
    from tests.tooling.small_checkout import small_tests, task_files

    (tmp_path / "class" / "crashes").mkdir(parents=True)
    (tmp_path / "class" / "crashes" / "attention.py").write_text(at_import(REFERENCE, RESTARTED))
    tests = small_tests(tmp_path / "tests", task_files(("sdpa", "softmax_weights")))
    with warm_launcher([str(tmp_path)]) as launcher:
        assert launcher.zygote is not None and launcher.prefork is not None
        report = grade(tmp_path / "class" / "crashes", "public", tests_dir=tests, launcher=launcher,
                       syntax_scan=lambda source: [], partial=True)
    crashed = [t for t in report.tests if t.task == "sdpa"]
    after = [t for t in report.tests if t.task == "softmax_weights"]
    assert crashed and all(t.score == 0 and "died while" in (t.message or "") for t in crashed)
    assert not [t.message for t in crashed if "exit code" in (t.message or "")]
    assert after and all("argv[0] is '-c'" in (t.message or "") for t in after), after[0].message


def test_a_worker_a_pytest_child_restarts_is_timed_as_its_first_one(classroom, tmp_path):
    """A restart through the child's own channel (instructor.warm.prefork) gives the clock the zygote's child,
    as the first worker does: the time its tree waits for a CPU is not charged to the student's calls."""
    from grader.sandbox import clock
    from instructor.warm.prefork import _zygote_starter

    started, _ = classroom
    start_worker = _zygote_starter(started.channel.attach().detach())
    (tmp_path / "attention.py").write_text(PROBE)
    with open(tmp_path / "worker.log", "ab") as log:
        process, sock = start_worker(tmp_path / "attention.py", log, Limits())
    try:
        assert clock.tree_waits(process) is not None
        assert process.poll() is None and not start_worker.gone()
    finally:
        sock.close()
        process.kill()
        process.wait()
