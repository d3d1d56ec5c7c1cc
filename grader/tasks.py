"""The graded tasks: ids, points, what each covers. One source of truth for tests and reports."""

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
