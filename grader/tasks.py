"""The graded tasks: ids, points, what each covers, read from the lab's description (lab/lab.json). One source
of truth for tests and reports."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from grader.lab import LAB


@dataclass(frozen=True)
class Task:
    id: str
    points: int
    title: str
    functions: tuple[str, ...]
    bonus: bool = False


def _task(entry: dict[str, Any]) -> Task:
    return Task(str(entry["id"]), int(entry["points"]), str(entry["title"]), tuple(entry["functions"]),
                bool(entry.get("bonus", False)))


# The lab's tasks (lab/lab.json), in its order; bonus tasks are reported as bonus_score, never in the core points.
TASKS = tuple(_task(entry) for entry in LAB.description["tasks"])

BY_ID = {task.id: task for task in TASKS}
CORE_POINTS = sum(task.points for task in TASKS if not task.bonus)


def task_order(task_id: str) -> int:
    """The task's place in TASKS (unknown ids last), to sort by."""
    ids = [task.id for task in TASKS]
    return ids.index(task_id) if task_id in ids else len(ids)


def points_drift(tests: Iterable[tuple[str, float]], complete: bool) -> str | None:
    """Why the collected tests' points, (task, points) per test, disagree with TASKS, in one line; None when they
    agree. complete: every suite was collected, so each task's tests must carry exactly its points; a single
    suite holds part of them, so no more than its points. A task TASKS does not know always disagrees."""
    totals: dict[str, float] = {}
    for task_id, points in tests:
        totals[task_id] = totals.get(task_id, 0.0) + points
    wrong = [f"{task_id} has {points:g} points in the tests but is not in TASKS" for task_id, points in totals.items()
             if task_id not in BY_ID]
    for task in TASKS:
        have = totals.get(task.id, 0.0)
        if have > task.points or (complete and have != task.points):
            wrong.append(f"{task.id} has {have:g} points in the tests, {task.points} in TASKS")
    if not wrong:
        return None
    return (f"the suites' points disagree with lab/lab.json's tasks ({'; '.join(wrong)}): make them agree before "
            "grading (docs/instructors.md, \"Change points or add a test\")")
