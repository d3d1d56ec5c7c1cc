"""The graded tasks: ids, points, what each covers. One source of truth for tests and reports."""

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    id: str
    points: int
    title: str
    functions: tuple[str, ...]
    bonus: bool = False


TASKS = (
    Task("scores", 10, "Attention scores", ("attention_scores",)),
    Task("causal_mask", 10, "Causal mask", ("causal_mask",)),
    Task("softmax_weights", 15, "Masked softmax weights", ("attention_weights",)),
    Task("sdpa", 20, "Scaled dot-product attention", ("scaled_dot_product_attention", "ScaledDotProductAttention")),
    Task("heads", 10, "Split and merge heads", ("split_heads", "merge_heads")),
    Task("divisibility", 5, "DimensionMismatchError", ("split_heads", "MultiHeadAttention")),
    Task("mha", 20, "Multi-head attention", ("MultiHeadAttention",)),
    Task("efficiency", 10, "No Python loops", ("scaled_dot_product_attention", "MultiHeadAttention")),
    # Optional bonus tasks: reported as bonus_score, never part of the core 100 points.
    Task("tiled", 10, "Tiled attention (bonus)", ("tiled_attention",), bonus=True),
    Task("kv_cache", 10, "KV-cache decoding (bonus)", ("KVCache", "decode_step"), bonus=True),
)

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
    return (f"the suites' points disagree with grader/tasks.py ({'; '.join(wrong)}): make them agree before grading "
            "(docs/instructors.md, \"Change points or add a test\")")
