"""What the worker's sandbox lets student code see and do, asked from inside one worker."""

import contextlib
import os
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest

from grader.logtail import LOG_TAIL_BYTES, read_tail
from grader.paths import REPO
from grader.sandbox import cgroups, slots
from grader.sandbox import isolation as sandbox
from grader.sandbox.errors import RefusedInSubmission, SubmissionError
from grader.sandbox.policy import DEFAULT, MB
from grader.sandbox.proxy import Submission
from grader.sandbox.view import DEVICES, plan, worker_reads

pytestmark = pytest.mark.skipif(sandbox.level() != "namespaces", reason="needs root and namespaces (CI has both)")

PROBE = textwrap.dedent('''
    import os, socket, sys, threading
    import torch

    def identity():
        return [os.getuid(), os.getgid(), os.getcwd(), os.environ["HOME"], sys.flags.isolated]

    def visible_pids():
        return sorted(int(entry) for entry in os.listdir("/proc") if entry.isdigit())

    def can_write(path):
        try:
            with open(path, "w") as handle:
                handle.write("x")
            return True
        except OSError:
            return False

    def can_read(path):
        try:
            with open(path, "rb") as handle:
                handle.read(1)
            return True
        except OSError:
            return False

    def listing(path):
        return sorted(os.listdir(path)) if os.path.isdir(path) else None

    def connect(host, port):
        try:
            socket.create_connection((host, port), timeout=1).close()
            return "connected"
        except OSError as error:
            return type(error).__name__

    def signal_init():
        try:
            os.kill(1, 9)
            return "sent"
        except OSError as error:
            return type(error).__name__

    def own_pid():
        return os.getpid()

    def seccomp_status():
        with open("/proc/self/status") as status:
            return {k: v.strip() for k, v in (line.split(":", 1) for line in status) if k.startswith("Seccomp")}

    def sys_path():
        return list(sys.path)

    def in_a_thread():
        box = []
        worker = threading.Thread(target=lambda: box.append(1))
        worker.start()
        worker.join()
        return box

    def via_numpy(x):
        return torch.from_numpy(x.numpy() * 2)

    def prints_then_doubles(x):
        print(x)
        return x * 2

    def meta_lower_triangle():
        mask = torch.ones(4, 4, dtype=torch.bool, device="meta").tril()
        return [mask.device.type, "torch._dynamo" in sys.modules]

    def walk_outside(skip):
        """Every path of the file system, except what lies below the folders in skip."""
        found = []
        def visit(path):
            found.append(path)
            if path in skip or os.path.islink(path) or not os.path.isdir(path):
                return
            for name in os.listdir(path):
                visit(os.path.join(path, name))
        visit("/")
        return sorted(found)
''')


def allowed_view() -> tuple[set[str], set[str]]:
    """(the folders and files the worker may see, with everything below them; the whole skeleton that
    holds them: those, their ancestors and the recreated links)."""
    view = plan(worker_reads())
    roots = {*view.read_only, "/proc", view.scratch, *(f"/dev/{device}" for device in DEVICES)}
    skeleton = {"/"} | roots | {link for link, _ in view.links}
    for root in roots:
        skeleton |= {str(parent) for parent in Path(root).parents}
    return roots, skeleton


def assert_only_the_allow_list(submission) -> None:
    roots, skeleton = allowed_view()
    found = set(submission.walk_outside(sorted(roots)))
    assert found == skeleton, f"not allowed: {sorted(found - skeleton)}; missing: {sorted(skeleton - found)}"


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    folder = tmp_path_factory.mktemp("probe")
    (folder / "attention.py").write_text(PROBE)
    (folder / "neighbour.py").write_text("X = 1\n")
    submission = Submission(folder / "attention.py")
    yield submission, folder
    submission.stop()


def test_the_worker_sees_exactly_the_allow_list_and_nothing_else(worker):
    assert_only_the_allow_list(worker[0])


def test_the_worker_runs_under_the_system_call_filter(worker):
    status = worker[0].seccomp_status()
    assert status["Seccomp"] == "2" and int(status.get("Seccomp_filters", "1")) >= 1


def test_the_worker_runs_as_its_own_unprivileged_uid_in_a_private_home(worker):
    uid, gid, cwd, home, isolated = worker[0].identity()
    assert slots.FIRST_UID <= uid < slots.FIRST_UID + slots.SLOTS and gid == uid
    assert cwd == home and isolated == 1


def test_only_its_own_processes_are_visible_and_init_cannot_be_signalled(worker):
    pids = worker[0].visible_pids()
    assert pids == sorted({1, worker[0].own_pid()})
    assert worker[0].signal_init() == "PermissionError"
    assert not worker[0].can_read("/proc/1/mem")


def test_only_the_scratch_home_is_writable(worker):
    submission, folder = worker
    home = submission.identity()[3]
    assert submission.can_write(f"{home}/notes.txt")
    site = Path(os.__file__).parent
    for path in (REPO / "grader" / "x.py", REPO / "grader" / "__pycache__" / "x.pyc",
                 Path(sandbox.__file__).parents[1] / ".venv" / "x.pth", site / "x.pth", "/tmp/x", "/dev/shm/x",
                 folder / "x"):
        assert not submission.can_write(str(path)), path


def test_the_submission_folder_tests_and_solutions_are_hidden(worker):
    submission, folder = worker
    assert submission.listing(str(folder)) in ([], None)
    assert submission.listing(str(REPO / "tests")) in ([], None)
    assert submission.listing(str(REPO / "solutions")) in ([], None)
    assert str(folder) not in submission.sys_path()


def test_there_is_no_network(worker):
    assert worker[0].connect("127.0.0.1", 22) != "connected"
    assert worker[0].connect("1.1.1.1", 80) != "connected"


def test_threads_and_numpy_round_trips_are_refused(worker):
    with pytest.raises(RefusedInSubmission, match="thread"):
        worker[0].in_a_thread()
    import torch

    with pytest.raises(RefusedInSubmission, match="torch tensor operations"):
        worker[0].via_numpy(torch.ones(2))


def test_a_meta_device_operation_in_a_graded_call_imports_no_compiler(worker):
    """torch wraps its meta kernels so that their first call imports torch._dynamo (operator definitions, which
    the guard refuses in a call, and 1.5 CPU-seconds); the worker compiles nothing and skips that import."""
    submission, _ = worker
    assert submission.meta_lower_triangle() == ["meta", False]


def test_printing_a_tensor_in_a_graded_call_is_allowed_and_not_counted(worker):
    import torch

    value, measured = worker[0].measure(worker[0].prints_then_doubles, torch.ones(3))  # a refusal would raise
    assert torch.equal(value, torch.full((3,), 2.0)) and measured.op_count == 1


def test_the_tree_has_a_memory_and_a_process_limit_while_it_runs(worker):
    uid = worker[0].identity()[0]
    if cgroups.version() == 2:
        group = next(cgroups.ROOT.glob(f"**/grader-sandbox-{uid}"), cgroups.ROOT / "none")
        memory, pids = group / "memory.max", group / "pids.max"
    else:
        memory = cgroups.ROOT / "memory" / f"grader-sandbox-{uid}" / "memory.limit_in_bytes"
        pids = cgroups.ROOT / "pids" / f"grader-sandbox-{uid}" / "pids.max"
    if not memory.exists():
        pytest.skip("no writable cgroup memory controller here")
    assert int(memory.read_text()) <= DEFAULT.tree_memory_mb * MB
    assert int(pids.read_text()) == DEFAULT.processes


def processes_of(uid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    found.add(int(entry.name))
    return found


def test_nothing_of_the_sandbox_is_left_after_stop(tmp_path):
    """Its processes and cgroups, as they were before stop(): once stopped, its uid is free, and a grade
    running beside this test (make check runs several) may take it at once, with processes and cgroups of
    its own."""
    (tmp_path / "attention.py").write_text(PROBE)
    submission = Submission(tmp_path / "attention.py")
    uid = submission.identity()[0]
    processes = processes_of(uid)
    groups = {path: path.stat().st_ino for path in cgroups.ROOT.glob(f"**/grader-sandbox-{uid}")}
    assert processes
    submission.stop()
    time.sleep(0.2)
    assert not processes & processes_of(uid)
    assert not [path for path, inode in groups.items() if path.exists() and path.stat().st_ino == inode]


def test_a_symlinked_submission_is_refused(tmp_path):
    from grader.grade import grade
    from grader.report import FlagKind

    (tmp_path / "classmate").mkdir()
    (tmp_path / "classmate" / "attention.py").write_text("x = 1\n")
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "attention.py").symlink_to(tmp_path / "classmate" / "attention.py")
    report = grade(tmp_path / "student", "public")
    assert report.score == 0
    assert report.flags and report.flags[0].kind is FlagKind.REFUSED
    assert "symbolic link" in report.tests[0].message


def test_the_worker_log_is_read_from_its_last_16_kb(tmp_path):
    log = tmp_path / "log"
    log.write_bytes(b"a" * 1_000_000 + b"the end")
    assert read_tail(log).endswith("the end")
    assert len(read_tail(log)) == LOG_TAIL_BYTES


def test_batch_refuses_to_run_unsandboxed_unless_told(tmp_path, monkeypatch):
    from instructor.batch import run_batch

    monkeypatch.setattr(sandbox, "_LEVEL", {"level": "none"})
    with pytest.raises(sandbox.SandboxUnavailable, match="--no-sandbox"):
        run_batch(tmp_path, suite="public", output=tmp_path / "grades.csv", progress=False)
    assert run_batch(tmp_path, suite="public", output=tmp_path / "grades.csv", progress=False, no_sandbox=True) == {}


def test_batch_refuses_the_uid_level_unless_told_and_says_what_it_exposes(tmp_path, monkeypatch):
    from instructor.batch import run_batch

    monkeypatch.setattr(sandbox, "_LEVEL", {"level": "uid"})
    with pytest.raises(sandbox.SandboxUnavailable, match="world-readable files.*--no-sandbox"):
        run_batch(tmp_path, suite="public", output=tmp_path / "grades.csv", progress=False)


@pytest.mark.parametrize("where", [{"cluster": "local:1"}, {"scheduler": "tcp://127.0.0.1:8786"}])
def test_batch_on_dask_leaves_the_sandbox_check_to_the_hosts_that_grade(tmp_path, monkeypatch, where):
    from instructor import batch

    on_cluster = []
    monkeypatch.setattr(sandbox, "_LEVEL", {"level": "none"})
    monkeypatch.setattr(batch, "_grade_on_cluster", lambda *args: on_cluster.append(args[-1]))
    assert batch.run_batch(tmp_path, suite="public", output=tmp_path / "grades.csv", progress=False, **where) == {}
    assert on_cluster == [False]  # no_sandbox travels to the hosts, which call require() themselves


@pytest.mark.parametrize("level", ["uid", "none"])
def test_a_dask_host_grades_only_where_students_get_a_network_namespace(monkeypatch, level):
    """At the uid-only level a student shares the host's network and could hand Dask's ports a task."""
    from instructor.cluster import Job, grade_job

    monkeypatch.setattr(sandbox, "_LEVEL", {"level": level})
    with pytest.raises(sandbox.SandboxUnavailable, match="it needs sandbox: own uid, PID/network.* or sandbox: "
                                                         "user namespace .*as a user who may make user namespaces"):
        grade_job(Job("ada", b""), "public", 10.0)


def test_batch_and_dask_hosts_take_the_user_namespace_level_a_slurm_job_gets(tmp_path, monkeypatch):
    """Not root, but its own namespaces and allow-list view: no --no-sandbox needed (the class graded this way:
    tests/tooling/test_dask_unprivileged.py; the tamper suite at this level: make sandbox-user)."""
    from instructor.batch import BATCH_LEVELS, run_batch
    from instructor.cluster import DASK_LEVELS
    from instructor.preflight import probe

    monkeypatch.setattr(sandbox, "_LEVEL", {"level": "user-namespace"})
    assert run_batch(tmp_path, suite="public", output=tmp_path / "grades.csv", progress=False) == {}
    sandbox.require("batch on a Dask worker", levels=DASK_LEVELS)
    assert probe("public", no_sandbox=False)["problem"] == ""
    assert set(BATCH_LEVELS) == set(DASK_LEVELS) == set(sandbox.VIEW_LEVELS)  # each has a network namespace


def test_an_unimportable_neighbour_proves_the_folder_is_not_on_the_path(worker, tmp_path):
    (tmp_path / "attention.py").write_text("import neighbour\n")
    (tmp_path / "neighbour.py").write_text("X = 1\n")
    submission = Submission(tmp_path / "attention.py")
    try:
        with pytest.raises(SubmissionError, match="neighbour"):
            submission.identity
    finally:
        submission.stop()


# -- the "uid" level (root without namespaces), set up in a mount namespace by tests/tooling/at_level.py --

UID_CLASS = """
import json, sys
from pathlib import Path
from grader.sandbox import isolation as sandbox
from grader.sandbox import slots
from grader.sandbox.policy import DEFAULT, MB
from instructor.batch import run_batch
from tests.tooling.misbehaving import REFERENCE, STUBS, TAMPERING
root = Path(sys.argv[1])
students = {name: TAMPERING[name]["attention.py"] for name in sys.argv[2:]}
for name, text in {"honest_reference": REFERENCE, "honest_stubs": STUBS, **students}.items():
    (root / name).mkdir(parents=True)
    (root / name / "attention.py").write_text(text)
reports = run_batch(root, suite="public", jobs=2, output=root.parent / "grades.csv", progress=False, timeout=300,
                    no_sandbox=True)  # the uid level: accepted explicitly, as --no-sandbox does
print(json.dumps({"level": sandbox.describe(), "reports": {name: report.to_json() for name, report in reports.items()}}))
"""
UID_ATTACKS = ("reads_and_signals_other_processes", "persists_into_later_runs", "reads_a_classmates_file",
               "daemon_rewrites_results")


@pytest.fixture(scope="module")
def uid_class(tmp_path_factory):
    import json
    import subprocess
    import sys

    from tests.tooling import at_level

    why = at_level.unavailable("uid")
    if why:
        pytest.skip(why)
    base = tmp_path_factory.mktemp("uid-level")
    (base / "results.json").write_text("the grader's results")
    env = dict(os.environ, TAMPER_SCOPE=str(base / "class"), TAMPER_TARGET=str(base / "results.json"),
               GRADER_CALL_TIMEOUT="2", GRADER_WORKER_MEMORY_MB="512")
    done = subprocess.run(at_level.argv("uid", [sys.executable, "-c", UID_CLASS, str(base / "class"), *UID_ATTACKS]),
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    time.sleep(4)  # longer than the daemon attack waits before it writes
    return base, json.loads(done.stdout.strip().splitlines()[-1])


def test_the_uid_level_is_the_one_in_force(uid_class):
    assert uid_class[1]["level"] == "isolation: " + sandbox.DESCRIPTIONS["uid"]


def test_at_the_uid_level_the_reference_keeps_full_marks_and_the_stubs_zero(uid_class):
    reports = uid_class[1]["reports"]
    assert reports["honest_reference"]["score"] == reports["honest_reference"]["max_score"] > 0
    assert reports["honest_stubs"]["score"] == 0
    assert reports["honest_reference"]["flags"] == reports["honest_stubs"]["flags"] == []


@pytest.mark.parametrize("name", UID_ATTACKS)
def test_at_the_uid_level_an_attack_earns_nothing(uid_class, name):
    assert uid_class[1]["reports"][name]["score"] == 0


def test_at_the_uid_level_nothing_is_written_outside_the_scratch(uid_class):
    from tests.tooling.misbehaving import PERSIST_PROBES

    site = Path(sysconfig.get_paths()["purelib"])
    for path in (site / PERSIST_PROBES[0],
                 REPO / "grader" / "__pycache__" / PERSIST_PROBES[1], REPO / "tests" / PERSIST_PROBES[2]):
        assert not path.exists(), path
    assert (uid_class[0] / "results.json").read_text() == "the grader's results"
