"""Reports made by hand (grader.report.make_report), for the tests of the tools that read a class's reports:
no grading run, so each test states the class it reads."""

from grader.report import Flag, FlagKind, Report, Status, TestResult, make_report

# (test id, task, suite, points): a small suite over two core tasks and one bonus task.
SUITE = (
    ("tests/public/test_scores.py::test_scale", "scores", "public", 6.0),
    ("tests/public/test_scores.py::test_shape", "scores", "public", 4.0),
    ("tests/hidden/test_scores.py::test_large", "scores", "hidden", 0.0),
    ("tests/public/test_causal_mask.py::test_diagonal", "causal_mask", "public", 10.0),
    ("tests/public/test_tiled.py::test_tiles", "tiled", "public", 10.0),
)
POINTS = {test_id: points for test_id, _, _, points in SUITE}


def report(failed: dict[str, str] | None = None, flags: tuple[Flag, ...] = (), impl: str = "/home/ta/class/ada",
           hidden_points: float = 5.0) -> Report:
    """Every test of SUITE passed but those of failed ({test id: message}); the hidden test is worth
    hidden_points."""
    failed = failed or {}
    tests = []
    for test_id, task, suite, points in SUITE:
        points = points or hidden_points
        lost = test_id in failed
        tests.append(TestResult(id=test_id, name=test_id.rsplit("::", 1)[1], task=task, suite=suite,
                                status=Status.FAILED if lost else Status.PASSED, message=failed.get(test_id, ""),
                                score=0.0 if lost else points, max_score=points, doc="", file=test_id.split("::")[0],
                                line=1))
    return make_report(tests, list(flags), "public+hidden", impl)


def missing() -> Report:
    return make_report([], [Flag(FlagKind.MISSING, "no attention.py in the submission")], "public+hidden", "x")


def not_graded() -> Report:
    return make_report([], [Flag(FlagKind.GRADER_ERROR, "the sandbox did not start")], "public+hidden", "x")
