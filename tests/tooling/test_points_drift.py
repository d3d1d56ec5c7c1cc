"""Points cannot drift: a suite whose points disagree with the tasks of lab/lab.json is refused in one line, before any
student's code runs, by `grade` and by `batch` (which then grades nobody)."""

import shutil

import pytest

from grader.paths import REPO
from grader.run import PointsDrift, run_pytest
from grader.tasks import points_drift


def test_the_real_suites_agree_with_the_task_table():
    from grader.run import collect_manifest, suite_paths

    names, tests_dir = suite_paths("all")
    manifest = collect_manifest(tests_dir, names, REPO / "solutions")
    assert points_drift([(meta.task, meta.points) for meta in manifest], complete=True) is None


def test_a_task_whose_tests_carry_more_points_than_the_table_is_refused():
    drift = points_drift([("scores", 8.0), ("scores", 3.0)], complete=False)
    assert drift and "scores has 11 points in the tests, 10 in TASKS" in drift and "\n" not in drift


def test_a_single_suite_may_hold_part_of_a_tasks_points():
    assert points_drift([("scores", 5.0)], complete=False) is None


def test_every_suite_together_must_hold_each_tasks_points_exactly():
    drift = points_drift([("scores", 5.0)], complete=True)
    assert drift and "scores has 5 points in the tests, 10 in TASKS" in drift
    assert "causal_mask has 0 points in the tests, 10 in TASKS" in drift


def test_a_task_the_table_does_not_know_is_refused():
    drift = points_drift([("attention", 1.0)], complete=False)
    assert drift and "attention has 1 points in the tests but is not in TASKS" in drift


DRIFTED = ("import pytest\n\npytestmark = pytest.mark.task('scores')\n\n"
           "@pytest.mark.points(11)\ndef test_a():\n    pass\n")


@pytest.fixture
def drifted(tmp_path):
    """A public suite whose one scores test is worth 11 points (the table: 10), and a class of one."""
    (tmp_path / "tests" / "public").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "tests" / "conftest.py")
    (tmp_path / "tests" / "public" / "test_drift.py").write_text(DRIFTED)
    (tmp_path / "class" / "ada").mkdir(parents=True)
    shutil.copy(REPO / "solutions" / "attention.py", tmp_path / "class" / "ada" / "attention.py")
    return tmp_path


def test_grading_with_drifted_points_is_refused_naming_the_task(drifted):
    with pytest.raises(PointsDrift, match="scores has 11 points in the tests, 10 in TASKS"):
        run_pytest(drifted / "class" / "ada" / "attention.py", "public", tests_dir=drifted / "tests")


def test_a_batch_with_drifted_points_stops_and_writes_no_gradebook(drifted):
    from instructor.batch import run_batch

    with pytest.raises(PointsDrift):
        run_batch(drifted / "class", "public", output=drifted / "grades.csv", tests_dir=drifted / "tests",
                  progress=False, no_sandbox=True)
    assert not (drifted / "grades.csv").exists()
