"""Loops show up as operation counts: vectorised code runs the same number of tensor operations at
every shape, a loop over batch, heads or positions runs more as that dim grows. No timing.

A count earns nothing on its own: every counted call's result is checked against torch's too, so code
that does nothing (and so runs no loop) does not pass."""

from tests.support import inputs, mha, oracle
from tests.support.feedback import assert_close, call_measured, fail

SLACK = 2
VALUES_FIRST = ("the operation count is only credited for a correct result: fix the tests of the function "
                "itself first")


def counted(submission, function, label, *args, **kwargs):
    """(function(*args, **kwargs), the number of tensor operations that call ran)."""
    result, measured = call_measured(submission, function, label, *args, **kwargs)
    return result, measured.op_count


ADVICE = ("Vectorised code runs the same operations at every shape: let one batched matmul/einsum/softmax "
          "handle every leading dim and every position at once.")


def assert_no_loops(name, base, grown, advice=ADVICE):
    """base: (shape text, count) at a small shape; grown: [(dim in words, shape text, count)], each
    the base shape with one dim made larger. Fails naming every dim whose growth raises the count."""
    base_shape, base_count = base
    loops = [(dim, shape, count) for dim, shape, count in grown if count > base_count + SLACK]
    if not loops:
        return
    runs = "; ".join(f"{count} at {shape}" for _, shape, count in loops)
    dims = " and ".join(dict.fromkeys(dim for dim, _, _ in loops))
    fail(
        f"{name} ran {base_count} tensor operations at {base_shape} but {runs}: the count grows with "
        f"{dims}.\nLikely cause: a Python loop over {dims}. {advice}"
    )


def shape_text(names, shape):
    return "(" + ", ".join(f"{name}={size}" for name, size in zip(names, shape)) + ")"


def sdpa_count(submission, shape, salt, make_mask=None, **kwargs):
    """scaled_dot_product_attention's operation count at shape (B, H, T, d), after checking its output
    and weights against torch's (mask: make_mask(shape) or none)."""
    batch, heads, length, d = shape
    q, k, v = inputs.qkv(lead=(batch, heads), q_len=length, k_len=length, d=d, salt=salt)
    mask = make_mask(shape) if make_mask else None
    label = f"scaled_dot_product_attention at {shape_text('BHTd', shape)}"
    got, count = counted(submission, submission.scaled_dot_product_attention, label, q, k, v, mask=mask, **kwargs)
    expected = oracle.sdpa(q, k, v, mask=mask, **kwargs)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"{label} should return (output, weights), got {type(got).__name__}")
    for part, value, known in zip(("output", "weights"), got, expected):
        assert_close(value, known, f"{label}: {part}", hint=VALUES_FIRST)
    return count


def mha_count(submission, shape, salt, make_mask=None, cross=False, **kwargs):
    """MultiHeadAttention.forward's operation count at shape (B, T, d_model, H), after checking its
    output and weights against torch's. cross: key and value of their own, with Tk = T + 3."""
    batch, length, d_model, n_heads = shape
    module, params = mha.build(submission, d_model, n_heads, seed=salt)
    query = inputs.randn(batch, length, d_model, salt=salt)
    key = inputs.randn(batch, length + 3, d_model, salt=salt + 1) if cross else None
    value = inputs.randn(batch, length + 3, d_model, salt=salt + 2) if cross else None
    mask = make_mask(shape) if make_mask else None
    label = f"MultiHeadAttention({d_model}, {n_heads}).forward at {shape_text(('B', 'T', 'd_model', 'H'), shape)}"
    got, count = counted(submission, module, label, query, key, value, mask=mask, **kwargs)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        fail(f"{label} should return (output, weights), got {type(got).__name__}")
    expected = oracle.mha(params, n_heads, query, key, value, mask=mask, **kwargs)
    mha.compare(submission, got, expected, label, hint=VALUES_FIRST)
    return count
