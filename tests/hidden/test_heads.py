"""Task `heads` (hidden): merge_heads' layout, non-contiguous inputs, extreme head counts, no mutation."""

import pytest

from tests.support import inputs, oracle
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import assert_close, assert_unchanged, call, call_measured
from tests.support.heads import HEAD_DIMS, MODEL_DIMS, RESHAPE, run
from tests.support.mistakes import merge_mistakes, split_mistakes

pytestmark = pytest.mark.task("heads")


@pytest.mark.points(1)
def test_merge_heads_puts_head_h_at_features_h_times_d_head_onwards(submission):
    """merge_heads(x)[b, t, h*d_head + e] == x[b, h, t, e], with B, H, T and d_head all different."""
    x = inputs.randn(3, 4, 2, 5, salt=160)
    got = run(submission.merge_heads, "merge_heads(x [3, 4, 2, 5])", x)
    assert_close(got, oracle.merge_heads(x), "merge_heads(x [3, 4, 2, 5])", MODEL_DIMS,
                 layout="[B, T, H * d_head]", hint="transpose(1, 2) to [B, T, H, d_head], then flatten(-2)",
                 mistakes=merge_mistakes(x))


@pytest.mark.points(1)
def test_merge_heads_of_a_non_contiguous_input(submission):
    """merge_heads works on a non-contiguous [B, H, T, d_head] view (e.g. a permuted tensor)."""
    x = inputs.randn(4, 2, 3, 5, salt=161).permute(1, 2, 3, 0)  # [2, 3, 5, 4], non-contiguous
    label = "merge_heads(x) with x a permuted (non-contiguous) view"
    got = run(submission.merge_heads, label, x)
    assert_close(got, oracle.merge_heads(x), label, MODEL_DIMS, layout="[B, T, H * d_head]", hint=RESHAPE,
                 mistakes=merge_mistakes(x))


@pytest.mark.points(1)
def test_split_heads_of_a_non_contiguous_input(submission):
    """split_heads works on a non-contiguous [B, T, d_model] view (e.g. a transposed tensor)."""
    x = inputs.randn(5, 2, 12, salt=162).transpose(0, 1)  # [2, 5, 12], non-contiguous
    label = "split_heads(x, 3) with x a transposed (non-contiguous) view"
    got = run(submission.split_heads, label, x, 3)
    assert_close(got, oracle.split_heads(x, 3), label, HEAD_DIMS, layout="[B, H, T, d_head]", hint=RESHAPE,
                 mistakes=split_mistakes(x, 3))


@pytest.mark.points(1)
def test_one_head_and_one_feature_per_head(submission):
    """split_heads and merge_heads work for H = 1 and for H = d_model (d_head = 1)."""
    x = inputs.randn(2, 5, 12, salt=163)
    for n_heads, shape in ((1, "[2, 1, 5, 12]"), (12, "[2, 12, 5, 1]")):
        label = f"split_heads(x [2, 5, 12], {n_heads})"
        split = call(submission.split_heads, label, x, n_heads,
                     hint="size-1 dims are real dims: do not squeeze() them away")
        assert_close(split, oracle.split_heads(x, n_heads), label, HEAD_DIMS, layout=f"[B, H, T, d_head] = {shape}",
                     hint="view as [B, T, H, d_head], then transpose(1, 2)", mistakes=split_mistakes(x, n_heads))
        label = f"merge_heads(x {shape})"
        heads = oracle.split_heads(x, n_heads).contiguous()
        merged = call(submission.merge_heads, label, heads, hint="size-1 dims are real dims: do not squeeze() them")
        assert_close(merged, x, label, MODEL_DIMS, layout="[B, T, H * d_head]",
                     hint="transpose(1, 2), then flatten(-2)", mistakes=merge_mistakes(heads))


@pytest.mark.points(1)
def test_split_heads_leaves_x_unchanged(submission):
    """split_heads returns the right heads and does not modify its input x in place."""
    x = inputs.randn(2, 5, 12, salt=164)
    got, measured = call_measured(submission, submission.split_heads, "split_heads(x [2, 5, 12], 6)", x, 6)
    assert_close(got, oracle.split_heads(x, 6), "split_heads(x [2, 5, 12], 6)", HEAD_DIMS,
                 layout="[B, H, T, d_head]", mistakes=split_mistakes(x, 6))
    assert_unchanged([x], measured.args_after[:1], ["x"], "split_heads")
