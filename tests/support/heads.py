"""Calling split_heads and merge_heads, and the dims of their results."""

from tests.support.feedback import call

HEAD_DIMS = ("b", "h", "t", "e")
MODEL_DIMS = ("b", "t", "f")
RESHAPE = "a transposed tensor cannot be view()ed: use reshape(), or .contiguous() before view()"


def run(function, label, *args, hint=RESHAPE):
    """function(*args); a .view() on a non-contiguous tensor is named as such (feedback.KNOWN_ERRORS)."""
    return call(function, label, *args, hint=hint)
