"""Points add up: each task's tests (public + hidden) carry exactly the task's points; the core is 100."""

from grader.run import collect_manifest, suite_paths
from grader.tasks import CORE_POINTS, TASKS


def test_each_task_s_tests_carry_its_points():
    names, tests_dir = suite_paths("all")
    manifest = collect_manifest(tests_dir, names, tests_dir.parent / "solutions")
    totals = {}
    for test in manifest:
        totals[test.task] = totals.get(test.task, 0) + test.points
    assert totals == {task.id: task.points for task in TASKS}


def test_core_is_worth_100_points():
    assert CORE_POINTS == 100


def test_every_task_has_public_tests():
    names, tests_dir = suite_paths("public")
    public = {test.task for test in collect_manifest(tests_dir, names, tests_dir.parent / "solutions")}
    assert public == {task.id for task in TASKS}
