"""Run a suite in a child pytest process and collect its signed results.

Student code runs in a worker below that child, never here. Results come back as HMAC-signed lines on
a pipe (grader.plugin.Reporter) with a key sent on a second pipe; unsigned lines are counted and
flagged, never believed. A test with no signed result did not pass.
"""

import hashlib
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader.handover import Handover
from grader.launch import PLAIN, Launcher
from grader.logtail import read_tail
from grader.paths import GRADER, NOT_FOR_PYTEST, REPO, SUITES, TESTS, scrubbed, suite_names
from grader.records import TestMeta, TestRecord
from grader.report import Flag, FlagKind
from grader.sandbox import linux
from grader.sandbox.isolation import level
from grader.sandbox.policy import Limits, limits_from
from grader.signing import verify
from grader.tasks import points_drift


class GraderError(RuntimeError):
    """The grading setup itself is broken (not the student's fault)."""


class PointsDrift(GraderError):
    """The suites' points disagree with grader.tasks: no student may be graded with them (batch stops)."""


@dataclass
class RawRun:
    impl: str
    suites: tuple
    manifest: list[TestMeta] | None = None
    results: dict[str, TestRecord] = field(default_factory=dict)
    flags: list[Flag] = field(default_factory=list)
    log: str = ""
    elapsed: float = 0.0
    timed_out: bool = False
    pytest_json: dict[str, Any] | None = None  # pytest-json-report's report of the run, signed like the results
    grader_error: str | None = None  # the grader could not run the student's code (its sandbox did not start)
    points_drift: str | None = None  # the suites' points disagree with grader.tasks: nothing was run
    worker_ready: bool = False  # a worker stood in its sandbox with torch imported: the student's code could run
    partial: bool = False  # the suites are some of the lab's test files: a task's tests may hold less than its points


# The levels whose worker can neither write the checkout nor signal the test process (a read-only view and a PID
# namespace, or another uid): a change of the grading files during a run there, or a test process that died
# before reporting every test, is someone else's doing, and the run cannot be trusted for anyone.
SANDBOXED = ("namespaces", "uid", "user-namespace")
DIED_UNDER_THE_GRADER = ("the test process ended before it reported {missing} of {total} tests, and the student's "
                         "code cannot reach it at this isolation: it was killed from outside (the out-of-memory "
                         "killer of a loaded host, say); grade again")
CHANGED_UNDER_THE_GRADER = ("the grading files (tests/ or grader/) changed while this submission was graded, and "
                            "the student's code cannot write them at this isolation: someone changed the checkout "
                            "meanwhile; grade again once it is stable")


def suite_paths(suite: str, tests_dir: str | Path | None = None) -> tuple[tuple[str, ...], Path]:
    tests_dir = Path(tests_dir or TESTS)
    names = suite_names(suite)
    return tuple(name for name in names if (tests_dir / name).is_dir()), tests_dir


def fingerprint(tests_dir: str | Path) -> str:
    """Hash of every grading file, to notice a submission that edits them while it runs."""
    digest = hashlib.sha256()
    for root in (Path(tests_dir), GRADER):
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


# pytest-json-report sends its report through plugin.pytest_json_modifyreport; no file is written.
JSON_REPORT = ("--json-report", "--json-report-file=none",
               "--json-report-omit", "collectors", "log", "streams", "warnings", "keywords")


# The only plugins a graded pytest loads besides the grader's own: child_env turns off pytest's autoloading,
# so that whatever else is installed (hypothesis's plugin costs each run 1.3 CPU-seconds; pytest-randomly
# would reorder the tests) does not take part in a grade.
PLUGINS = ("pytest_jsonreport.plugin", "pytest_metadata.plugin")


def _rootdir(tests_dir: Path) -> Path:
    """The folder test ids are relative to: the checkout, or above a tests folder outside it (a test's id is its
    path from there; outside the rootdir pytest would give public/test_x.py and hidden/test_x.py one id)."""
    tests_dir = Path(tests_dir).resolve()
    return REPO if tests_dir.is_relative_to(REPO) else tests_dir.parent


def pytest_command(paths: Sequence[str], impl: str | Path, extra: Sequence[str], rootdir: Path = REPO) -> list[str]:
    """argv of a graded pytest run on paths (instructor.reach runs the suites the same way)."""
    return [
        sys.executable, "-m", "pytest", *paths, "--impl", str(impl),
        "-q", "--tb=no", "--no-header", "-p", "no:cacheprovider", "-o", "addopts=",
        "-c", str(GRADER / "pytest.ini"), "--rootdir", str(rootdir), "--confcutdir", str(REPO),
        "-p", "grader.sandbox.undumpable", *(arg for plugin in PLUGINS for arg in ("-p", plugin)), *extra,
    ]


def child_env() -> dict[str, str]:
    """The environment of every pytest child, before its handover: this process's, without what is not for it."""
    env = scrubbed(os.environ, NOT_FOR_PYTEST)
    # One OpenMP thread: the suites' tensors are small, and with several gradings at once (batch) idle
    # OpenMP threads spin on the shared cores (measured: 6 students with --jobs 2 took 41 s and 62
    # CPU-seconds with torch's default threads, 21 s and 22 CPU-seconds with one).
    env.update(PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


def _kill_group(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _end_worker(worker):
    if isinstance(worker, subprocess.Popen):
        _kill_group(worker)
    else:  # a zygote's worker: in its own namespaces, not in our process groups
        worker.kill()
        worker.wait()


# The longest report line read: the pytest-json record of a whole run is a few hundred kilobytes (messages and
# strings from the worker are bounded, grader.sandbox.wire); a longer line is dropped as unsigned.
MAX_LINE = 64 * 1024 * 1024


class _Lines:
    """Bytes in, whole lines out, in time linear in what arrives; a line past MAX_LINE comes out as None."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def feed(self, chunk: bytes) -> list[bytes | None]:
        *ends, rest = chunk.split(b"\n")
        lines: list[bytes | None] = []
        for end in ends:
            lines.append(None if self.size + len(end) > MAX_LINE else b"".join([*self.parts, end]))
            self.parts, self.size = [], 0
        if self.size <= MAX_LINE:  # past it, the rest of the line is only counted
            self.parts.append(rest)
        self.size += len(rest)
        return lines


def collect(run: RawRun, process: Any, report_fd: int, key: bytes, deadline: float) -> None:
    """Read signed lines until the child closes the pipe or the deadline passes."""
    lines = _Lines()
    unsigned = 0
    stream = os.fdopen(report_fd, "rb", buffering=0)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            run.timed_out = True
            _kill_group(process)
            break
        ready, _, _ = select.select([stream], [], [], min(remaining, 1.0))
        if not ready:
            continue
        chunk = stream.read(1 << 20)
        if not chunk:
            break
        for line in lines.feed(chunk):
            record, ok = verify("" if line is None else line.decode(errors="replace"), key)
            if not ok:
                unsigned += 1
            elif record["kind"] == "collected" and run.manifest is None:
                run.manifest = [TestMeta.from_json(test) for test in record["tests"]]
                run.points_drift = points_drift([(meta.task, meta.points) for meta in run.manifest],
                                                complete=set(run.suites) >= set(SUITES) and not run.partial)
                if run.points_drift:  # refused before the student's code runs: their grade would not be ours
                    _kill_group(process)
            elif record["kind"] == "result":
                run.results.setdefault(record["id"], TestRecord.from_json(record))
            elif record["kind"] == "pytest-json" and run.pytest_json is None:
                run.pytest_json = record["report"]
            elif record["kind"] == "worker-ready":
                run.worker_ready = True
            elif record["kind"] == "grader-error" and run.grader_error is None:
                run.grader_error = record["message"]
    stream.close()
    if unsigned:
        text = f"{unsigned} unsigned line(s) were written to the grader's report channel"
        run.flags.append(Flag(FlagKind.TAMPERING, text))


NO_HANDOVER = Handover()


def _start_pytest(tests_dir: Path, names: tuple[str, ...], impl: str | Path, extra_args: Sequence[str] = (),
                  stdout: Any = subprocess.DEVNULL, handover: Handover = NO_HANDOVER,
                  launcher: Launcher = PLAIN) -> tuple[Any, int, bytes]:
    """Start pytest on the suites with a fresh one-time key; returns (process, report pipe, key).
    handover: what the child gets beyond the key and report pipes (a worker, the limits, the level)."""
    key = secrets.token_bytes(32)
    key_read, key_write = os.pipe()
    report_read, report_write = os.pipe()
    os.write(key_write, key)
    os.close(key_write)
    command = pytest_command([str(Path(tests_dir) / name) for name in names], impl, list(extra_args),
                              _rootdir(tests_dir))
    handover = replace(handover, key_fd=key_read, report_fd=report_write)
    try:
        if stdout == subprocess.DEVNULL:
            with open(os.devnull, "wb") as devnull:
                process = launcher.start_pytest(command, child_env(), REPO, handover, devnull)
        else:
            process = launcher.start_pytest(command, child_env(), REPO, handover, stdout)
    except BaseException:
        os.close(report_read)
        raise
    finally:
        os.close(key_read)
        os.close(report_write)
    return process, report_read, key


def run_pytest(impl: str | Path, suite: str = "public", timeout: float = 600.0,
               tests_dir: str | Path | None = None, limits: Limits | None = None,
               hide: tuple[str, ...] = (), launcher: Launcher = PLAIN, partial: bool = False) -> RawRun:
    """Run one suite (public, hidden or all) on the student's file at impl; return a RawRun.

    launcher: how the pytest child and the worker start (grader.launch; batch passes instructor.warm's), and
    whether the worker starts here before pytest or in the pytest child (Launcher.worker_before_pytest: the
    rule, and why).
    limits: the worker's limits and timeouts (default: Limits with the GRADER_* overrides of this process's
    environment). hide: folders no worker may see, beyond the checkout and the student's folder (batch: the
    class). partial: tests_dir holds some of the lab's test files (instructor.mutants grades a mutant on the files
    that can reach its change), so no task need carry all its points. Raises GraderError when the grader could not
    run the student's code at all.
    """
    limits = limits or limits_from(os.environ)
    names, tests_dir = suite_paths(suite, tests_dir)
    if not names:
        raise GraderError(f"no test suite {suite!r} under {tests_dir}")
    linux.make_undumpable()  # this process holds every run's key
    impl = Path(impl).resolve()
    run = RawRun(impl=str(impl), suites=names, partial=partial)
    worker_log = tempfile.NamedTemporaryFile(prefix="grader-worker-", suffix=".log", delete=False)
    worker = None
    # the level this run was checked for, not one the child finds anew
    handover = Handover(worker_log=worker_log.name, limits=limits, hide=tuple(map(str, hide)), level=level())
    if launcher.worker_before_pytest:
        worker, worker_sock = launcher.start_worker(impl, worker_log, names == ("public",), limits, hide)
        handover = replace(handover, worker_fd=worker_sock.fileno(), worker_pid=worker.pid)
    before = fingerprint(tests_dir)
    started = time.monotonic()
    log = tempfile.TemporaryFile()
    process, report_read, key = _start_pytest(tests_dir, names, impl, JSON_REPORT, stdout=log, handover=handover,
                                              launcher=launcher)
    if worker:
        worker_sock.close()
    collect(run, process, report_read, key, started + timeout)
    if not run.timed_out and not run.results:  # pytest stopped before any test: let it print why
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    _kill_group(process)  # its channel is closed: nothing more to hear; also kills leftovers
    if worker:
        _end_worker(worker)
    worker_log.close()
    os.unlink(worker_log.name)
    run.elapsed = time.monotonic() - started
    run.log = read_tail(log)
    log.close()
    if fingerprint(tests_dir) != before:
        if level() in SANDBOXED:  # not the student's doing: someone changed the checkout meanwhile
            raise GraderError(CHANGED_UNDER_THE_GRADER)
        run.flags.append(Flag(FlagKind.TAMPERING, "the grading files (tests/ or grader/) changed during the run"))
    if run.points_drift is not None:
        raise PointsDrift(run.points_drift)
    if run.grader_error is not None:
        raise GraderError(run.grader_error)
    if run.manifest is None:  # pytest lists the tests before the worker imports the student's file: not the student's
        what = "reached the time limit" if run.timed_out else "stopped"
        raise GraderError(f"the test process {what} before it listed the tests, before any of the student's code "
                          "ran:\n" + run.log[-4000:])
    if run.timed_out and not run.worker_ready:
        raise GraderError(f"no worker was ready to run the student's code within the time limit ({timeout:g} s): "
                          "its sandbox did not start in time, and nothing of the student's ran (a stuck or "
                          "loaded machine; grade again, or give a longer --timeout)")
    missing = sum(1 for meta in run.manifest or [] if meta.id not in run.results)
    if run.results and missing and not run.timed_out and level() in SANDBOXED:
        raise GraderError(DIED_UNDER_THE_GRADER.format(missing=missing, total=len(run.manifest or [])))
    if run.manifest and not run.results and not run.timed_out:
        # Every test reports a result, whatever the student's code does in it (a crash, a hang, an exit are
        # the test's failure); a run with none stopped in the grader's own code, e.g. a suite that no longer imports.
        raise GraderError("the test process ran no test to its end (a suite failed to import, or pytest stopped):\n"
                          + run.log[-4000:])
    return run


# (suite folder, suite names, fingerprint of the grading files) -> the suite's manifest. A process that grades
# many files (batch, a Dask host, the tooling tests) collects a suite once for the reports of the files that never
# run (missing, refused): each collection is a pytest process that imports torch, a few CPU-seconds.
_MANIFESTS: dict[tuple[str, tuple[str, ...], str], list[TestMeta]] = {}


def collect_manifest(tests_dir: Path, names: tuple[str, ...], impl: str | Path) -> list[TestMeta] | None:
    """The suite's tests and points from a collect-only run that starts no worker (once per process while the
    grading files stay as they are: impl is only named, never run)."""
    cached = (str(Path(tests_dir).resolve()), tuple(names), fingerprint(tests_dir))
    if cached not in _MANIFESTS:
        process, report_read, key = _start_pytest(tests_dir, names, impl, ["--collect-only"],
                                                  handover=Handover(collect_only=True))
        probe = RawRun(impl="", suites=tuple(names))
        collect(probe, process, report_read, key, time.monotonic() + 120)
        _kill_group(process)
        if probe.manifest is None:
            return None
        _MANIFESTS[cached] = probe.manifest
    return list(_MANIFESTS[cached])
