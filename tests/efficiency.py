"""Loops show up as operation counts: vectorised code runs the same number of tensor operations at
every shape, a loop over batch, heads or positions runs more as the shape grows. No timing."""

from tests.feedback import fail

SLACK = 2


def op_count(submission, call, *args, **kwargs):
    call(*args, **kwargs)
    return submission.last_stats["op_count"]


def assert_no_loops(name, small, large, small_shape, large_shape):
    if large > small + SLACK:
        fail(
            f"{name} ran {small} tensor operations at shape {small_shape} but {large} at {large_shape}: "
            "the count grows with the shape, so the code loops in Python over batch, heads or positions. "
            "Let one batched matmul/einsum/softmax handle every leading dim at once."
        )
