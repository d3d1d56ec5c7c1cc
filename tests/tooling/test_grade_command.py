"""`python -m grader grade`'s exit status says whether the grade is what was expected: full marks by default
(`make test`, the reference), no point at all with `--expect zero` (the stubs). The grades themselves are made by
hand (tests/tooling/made_reports.py); the whole suites' grades of the reference and the stubs are checked cold, on
the path Gradescope runs, by test_gradescope.py, and warm by `make mutants`."""

import grader.grade
from grader.cli import main
from tests.tooling import made_reports

EVERY_TEST = {test_id: "wrong" for test_id in made_reports.POINTS}


def exit_status(monkeypatch, report, *options: str) -> int:
    monkeypatch.setattr(grader.grade, "grade", lambda *args, **kwargs: report)
    return main(["grade", "--suite", "all", *options])


def test_full_marks_exit_0(monkeypatch):
    assert exit_status(monkeypatch, made_reports.report()) == 0


def test_a_lost_point_exits_1(monkeypatch):
    lost = made_reports.report({"tests/public/test_scores.py::test_scale": "wrong"})
    assert exit_status(monkeypatch, lost) == 1


def test_expect_zero_exits_0_when_nothing_was_earned(monkeypatch):
    assert exit_status(monkeypatch, made_reports.report(EVERY_TEST), "--expect", "zero") == 0


def test_expect_zero_exits_1_and_says_what_was_earned(monkeypatch, capsys):
    one_test = {test_id: "wrong" for test_id in EVERY_TEST if test_id != "tests/public/test_scores.py::test_shape"}
    assert exit_status(monkeypatch, made_reports.report(one_test), "--expect", "zero") == 1
    assert "expected 0 points, got 4" in capsys.readouterr().err


def test_expect_zero_counts_bonus_points_too(monkeypatch):
    bonus_only = {test_id: "wrong" for test_id in EVERY_TEST if "test_tiled" not in test_id}
    assert exit_status(monkeypatch, made_reports.report(bonus_only), "--expect", "zero") == 1
