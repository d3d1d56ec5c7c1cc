"""Gradescope's entry point: run_autograder calls `python -m grader gradescope-run`, which grades
/autograder/submission into /autograder/results/results.json, always, within the time limit."""

import math
import os
import threading
from collections.abc import Mapping
from pathlib import Path

from grader.formats import gradescope
from grader.paths import IMPL_NAME, Env
from grader.report import FlagKind, Report, failure_report
from grader.sandbox.policy import SettingError, limits_from, number

# Gradescope stops a run after 10 minutes by default and then shows no results at all: the tests get
# this much, and a watchdog writes results.json itself if the grader is still busy WATCHDOG_MARGIN later.
BUDGET_SECONDS = 480.0
WATCHDOG_MARGIN = 60.0


def _render_failure(root: Path, kind: FlagKind, message: str) -> str:
    return gradescope.render(failure_report(kind, message, "all", str(root / "submission")))


def _write(results: Path, text: str) -> None:
    tmp = results.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, results)


def _out_of_time(root: Path, results: Path, budget: float) -> None:
    message = (f"The autograder ran out of time: grading did not finish within {budget + WATCHDOG_MARGIN:g} s "
               "(Gradescope stops at 10 minutes). Look for an infinite loop or very slow code, then resubmit.")
    _write(results, _render_failure(root, FlagKind.OUT_OF_TIME, message))
    os._exit(0)


def grader_failure_message(error: BaseException) -> str:
    """What a student reads when the autograder itself failed: no score is theirs, and what to do."""
    return ("The autograder could not grade this submission: it failed on its own side, not because of your "
            "code, so this is not your score. Resubmit in a few minutes; if this message comes back, contact the "
            f"course staff and quote it. (For the staff: {type(error).__name__}: {error})")


def _note_missing(report: Report, submission: Path) -> None:
    """Tell a student who submitted no file of the lab's which files they did submit."""
    present = sorted(str(p.relative_to(submission)) for p in submission.rglob("*") if p.is_file())
    note = f"Your submission has: {', '.join(present) or 'no files'}. Upload a file named {IMPL_NAME}."
    for test in report.tests:
        test.message += f"\n{note}"


def run_budget(environ: Mapping[str, str]) -> float:
    """The seconds the tests get (GRADER_RUN_BUDGET, default BUDGET_SECONDS); SettingError for anything but a
    positive number."""
    text = environ.get(Env.RUN_BUDGET) or str(BUDGET_SECONDS)
    value = number(text)
    if not 0 < value < math.inf:
        raise SettingError(f"{Env.RUN_BUDGET}={text!r}: give the seconds the tests get, e.g. {BUDGET_SECONDS:g}, "
                           "or unset it")
    return value


def results_path(root: str | Path) -> Path:
    return Path(root) / "results" / "results.json"


def write_failure(root: str | Path, error: BaseException) -> Path:
    """Write the results.json of a grading the grader itself could not do: no points, and why."""
    results = results_path(root)
    results.parent.mkdir(parents=True, exist_ok=True)
    _write(results, _render_failure(Path(root), FlagKind.GRADER_ERROR, grader_failure_message(error)))
    return results


def run(root: str | Path, hidden_visibility: str = "after_published", budget: float | None = None) -> Path:
    """Grade root/submission on every suite into root/results/results.json; always write a file,
    within Gradescope's time limit: tests still running when the budget runs out fail as timed out.
    A failure of the grader's own (a bad setting, a sandbox that does not start, any exception) still writes
    a results.json that says so, then raises: the caller exits 2 for it."""
    root = Path(root)
    results = results_path(root)
    results.parent.mkdir(parents=True, exist_ok=True)
    try:  # the settings first: one that cannot grade correct code is refused before any student runs
        budget = budget or run_budget(os.environ)
        limits = limits_from(os.environ)
    except SettingError as error:  # the staff's setting: Gradescope still gets a results.json that says so
        write_failure(root, error)
        raise
    watchdog = threading.Timer(budget + WATCHDOG_MARGIN, _out_of_time, (root, results, budget))
    watchdog.daemon = True
    watchdog.start()
    try:
        from grader.grade import grade

        report = grade(root / "submission", "all", timeout=budget, limits=limits)
        if report.flags and report.flags[0].kind is FlagKind.MISSING:
            _note_missing(report, root / "submission")
        text = gradescope.render(report, hidden_visibility=hidden_visibility)
    except Exception as error:  # never leave Gradescope without a results.json
        watchdog.cancel()
        write_failure(root, error)
        raise
    watchdog.cancel()
    _write(results, text)
    return results
