"""The pytest side of grading: the `submission` fixture, points/task markers, readable failure
messages, and a signed stream of results for `python -m grader`.

tests/conftest.py imports everything here. When the grader runs pytest it hands it
(grader.handover) two pipe fds: a one-time HMAC key, read and closed at start-up, and the pipe where each
collected test and each result is written as one signed JSON line.
"""

import os
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from grader.handover import HANDOVER, WORKER_STARTER, Handover
from grader.paths import ASSIGNMENT, IMPL_NAME, REPO, SUITES, Env, find_impl
from grader.records import TestMeta, TestRecord
from grader.report import NOT_IMPLEMENTED_WORDS, Status
from grader.sandbox.errors import RaisedInSubmission, SandboxFailed, SubmissionError
from grader.sandbox.proxy import Submission
from grader.signing import Reporter
from grader.tasks import BY_ID

_STATE: dict[str, Any] = {}


def resolve_impl(impl: str | Path | None) -> Path:
    path = Path(impl or ASSIGNMENT).absolute()
    return find_impl(path) or path


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--impl",
        default=os.environ.get(Env.IMPL),
        help=f"folder (or file) holding the {IMPL_NAME} to test; default assignment/",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "points(n): points this test is worth")
    config.addinivalue_line("markers", "task(id): the graded task this test belongs to")
    # The one place the pytest child reads what the grader handed it (a warm launch stashed it already).
    handover = config.stash.get(HANDOVER, None) or Handover.from_environ(os.environ)
    if handover.report_fd is not None and handover.key_fd is not None:
        _STATE["reporter"] = Reporter(handover.report_fd, handover.key_fd)
    impl = resolve_impl(config.getoption("--impl"))
    _STATE["impl"] = impl
    if impl.is_file() and not handover.collect_only:
        reporter = _STATE.get("reporter")
        on_ready = (lambda: reporter.send({"kind": "worker-ready"})) if reporter else None
        submission = Submission(impl, limits=handover.limits, log_path=handover.worker_log,
                                hide=list(handover.hide), level=handover.level, on_ready=on_ready,
                                start_worker=config.stash.get(WORKER_STARTER, None))
        if handover.worker_fd is not None and handover.worker_pid is not None:
            # started for this run: by the grader before pytest, or forked by the twin (grader.sandbox.twin)
            submission.adopt(handover.worker_fd, handover.worker_pid)
        elif "reporter" in _STATE:  # a graded run: let the worker import torch while pytest collects
            submission.start()
        _STATE["submission"] = submission  # in a plain pytest run, the first test that needs it starts it


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    submission = _STATE.pop("submission", None)
    if submission is not None:
        submission.stop()
    reporter = _STATE.pop("reporter", None)
    if reporter is not None and _STATE.get("tests_ran"):  # else pytest may still print why it stopped
        # Everything is reported: the grader stops this process when the channel closes, which saves
        # the interpreter's shutdown with torch loaded (about a second of wall time, measured).
        sys.stdout.flush()
        sys.stderr.flush()
        reporter.stream.close()


def test_meta(item: pytest.Item) -> TestMeta:
    task = item.get_closest_marker("task")
    points = item.get_closest_marker("points")
    path = Path(str(item.fspath))
    function = getattr(item, "function", None)
    return TestMeta(
        id=item.nodeid,
        name=item.name,
        task=task.args[0] if task else "",
        points=points.args[0] if points else 0,
        suite=path.parent.name,
        doc=" ".join(((function.__doc__ if function else None) or "").split()),
        file=str(path.relative_to(REPO)) if REPO in path.parents else str(path),
        line=(item.location[1] or 0) + 1,
    )


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    graded = [meta for meta in map(test_meta, items) if meta.suite in SUITES]
    for meta in graded:
        if meta.task not in BY_ID:
            raise pytest.UsageError(f"{meta.id} needs @pytest.mark.task with one of {sorted(BY_ID)}")
        if not meta.points:
            raise pytest.UsageError(f"{meta.id} needs @pytest.mark.points(n)")
    reporter = _STATE.get("reporter")
    if reporter:
        reporter.send({"kind": "collected", "tests": [meta.to_json() for meta in graded]})


@pytest.fixture(scope="session")
def submission() -> Submission:
    """The student's file, running in a worker process (see grader.sandbox.proxy)."""
    if "submission" not in _STATE:
        impl = _STATE["impl"]
        pytest.fail(
            f"no {IMPL_NAME} at {impl}: pass --impl with the folder that holds it", pytrace=False
        )
    return _STATE["submission"]


@pytest.fixture(autouse=True)
def _watch_submission(request):
    """Start each test with no flags."""
    submission = _STATE.get("submission")
    if submission is not None:
        submission.flags = []
    yield


def explain(error: BaseException) -> str:
    """The message a student reads for an exception raised while a test ran."""
    if isinstance(error, RaisedInSubmission):
        remote: dict[str, Any] = error.remote or {}
        if error.not_implemented:
            return remote["message"] if NOT_IMPLEMENTED_WORDS in remote["message"] else (
                f"{NOT_IMPLEMENTED_WORDS} (NotImplementedError while {remote['doing']})"
            )
        where = f"\n  at {IMPL_NAME} line {remote['line']}: {remote['code'].strip()}" if remote.get("line") else ""
        return f"while {remote['doing']}, your code raised {remote['type']}: {remote['message']}{where}"
    if isinstance(error, SubmissionError):
        return str(error)
    if isinstance(error, SandboxFailed):
        return f"grader error (not your code's fault): {error}"
    if isinstance(error, (pytest.fail.Exception, AssertionError)):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _grader_error(item: pytest.Item, message: str) -> None:
    """The grader could not run the student's code: say so once on the signed channel and stop the session
    (the run ends as a grader error, exit 2; no test is scored)."""
    if "grader_error" in _STATE:
        return
    _STATE["grader_error"] = message
    reporter = _STATE.get("reporter")
    if reporter is not None:
        reporter.send({"kind": "grader-error", "message": message})
    item.session.shouldstop = "grader error"


def failed_status(error: BaseException | None, when: str) -> Status:
    """How a test failed: in the student's code (its error's status), at a stub left as given, or in
    the test's own setup or teardown."""
    if isinstance(error, RaisedInSubmission) and error.not_implemented:
        return Status.NOT_IMPLEMENTED
    if isinstance(error, SubmissionError):
        return Status(error.status)
    return Status.FAILED if when == "call" else Status.ERROR


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    status = Status.PASSED
    message = ""
    if report.failed:
        error = call.excinfo.value if call.excinfo else None
        if isinstance(error, SandboxFailed):
            _grader_error(item, str(error))
        status = failed_status(error, report.when)
        message = explain(error) if error is not None else str(report.longrepr)
        if isinstance(error, (SubmissionError, pytest.fail.Exception, AssertionError)):
            report.longrepr = message
    item.stash.setdefault(_RESULTS, []).append((status, message))


_RESULTS = pytest.StashKey[list[tuple[Status, str]]]()


OUTPUT_LIMIT = 2000


def _log_size(submission):
    try:
        return os.path.getsize(submission.log_path)
    except (AttributeError, OSError):
        return 0


def _printed_since(submission, offset):
    """What the worker wrote to its log (the student's print() output) since offset: the tail."""
    size = _log_size(submission)
    if size <= offset:
        return ""
    start = max(offset, size - OUTPUT_LIMIT)
    with open(submission.log_path, "rb") as log:
        log.seek(start)
        text = log.read(size - start).decode(errors="replace")
    return ("..." if start > offset else "") + text


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, None]:
    started = time.perf_counter()
    submission = _STATE.get("submission")
    log_offset = _log_size(submission)
    yield
    _STATE["tests_ran"] = True
    reporter = _STATE.get("reporter")
    if reporter is None:
        return
    status, message = Status.ERROR, "the test did not run"
    records = item.stash.get(_RESULTS, [])
    if records:
        failures = [(s, m) for s, m in records if s is not Status.PASSED]
        status, message = failures[0] if failures else (Status.PASSED, "")
    record = TestRecord(
        id=item.nodeid,
        status=status,
        message=message[:3000],
        duration=round(time.perf_counter() - started, 4),
        flags=list(getattr(submission, "flags", None) or []),
        output=_printed_since(submission, log_offset) if submission is not None else "",
    )
    reporter.send({"kind": "result", **record.to_json()})


# -- pytest-json-report: its per-test records, with our task and points as metadata, travel signed ---

@pytest.hookimpl(optionalhook=True)
def pytest_json_runtest_metadata(item: pytest.Item, call: pytest.CallInfo[None]) -> dict[str, Any]:
    if call.when != "call":
        return {}
    meta = test_meta(item)
    return {"task": meta.task, "points": meta.points, "suite": meta.suite}


@pytest.hookimpl(optionalhook=True)
def pytest_json_modifyreport(json_report: dict[str, Any]) -> None:
    reporter = _STATE.get("reporter")
    if reporter is not None:
        reporter.send({"kind": "pytest-json", "report": json_report})
