"""One student's row of the gradebook: graded, or `not graded` when the grader itself failed on them.

What batch (locally), cluster (on each Dask host) and lms (canvas-export refuses a gradebook with rows not
graded) share, in a module that imports none of them: instructor's modules import each other one way only
(batch -> cluster -> preflight; lms and all three -> gradebook), which tests/tooling/test_structure.py checks.
"""

from pathlib import Path

from grader.capabilities import SyntaxScan, scan
from grader.grade import grade
from grader.launch import PLAIN_BATCH, Launcher
from grader.report import FlagKind, Report, failure_report
from grader.run import GraderError, PointsDrift
from grader.sandbox.policy import Limits

NOT_GRADED = "not graded"  # the total of a student the grader failed on: never a 0
# A grader error is the grader's (a sandbox that did not start on a loaded host, the checkout changed meanwhile):
# the student is graded once more before the row says "not graded".
GRADER_ERROR_ATTEMPTS = 2


def error_report(folder: str | Path, suite: str, why: str) -> Report:
    """Every test unknown, no points: the report of a student the grader itself could not grade."""
    return failure_report(FlagKind.GRADER_ERROR, why, suite, str(folder))


def not_graded(report: Report) -> bool:
    """Whether the grader failed on this student (no test result): a row to regrade, never a 0."""
    return report.failure is not None and report.failure.kind is FlagKind.GRADER_ERROR


def grade_folder(folder: Path, suite: str, timeout: float, tests_dir: str | Path | None = None,
                 hide: tuple[str, ...] = (), launcher: Launcher = PLAIN_BATCH,
                 syntax_scan: SyntaxScan = scan, limits: Limits | None = None) -> Report:
    """folder's report; a report flagged as a grader error (not graded) when the grader itself failed twice.
    launcher: one for a process that grades several students (its default, or instructor.warm's)."""
    why = ""
    for _ in range(GRADER_ERROR_ATTEMPTS):
        try:
            return grade(folder, suite, timeout=timeout, tests_dir=tests_dir, hide=hide, launcher=launcher,
                         syntax_scan=syntax_scan, limits=limits)
        except PointsDrift:
            raise  # the suites themselves are wrong: no student of the class can be graded with them
        except GraderError as error:
            why = str(error)
        except Exception as error:  # one broken submission never stops the class
            return error_report(folder, suite, f"{type(error).__name__}: {error}")
    return error_report(folder, suite, why)


NOT_STUDENTS = ("__MACOSX",)  # what an archive tool adds beside the students' folders


def submissions(root: str | Path) -> list[Path]:
    """The students' folders of a class folder, by name (hidden folders and archive leftovers aside)."""
    return sorted(path for path in Path(root).iterdir()
                  if path.is_dir() and not path.name.startswith(".") and path.name not in NOT_STUDENTS)


def shown_name(folder_name: str) -> str:
    """A student folder's name as the gradebook writes it: valid UTF-8, with any byte that was not (a zip's
    Latin-1 names) written as \\xNN."""
    return folder_name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
