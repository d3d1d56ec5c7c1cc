"""Task `heads`: split_heads(x, n_heads) and merge_heads(x)."""

import pytest

from tests.support import inputs, oracle
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import assert_close
from tests.support.heads import HEAD_DIMS, MODEL_DIMS, run
from tests.support.mistakes import merge_mistakes, split_mistakes

pytestmark = pytest.mark.task("heads")


@pytest.mark.points(2)
def test_head_h_holds_features_h_times_d_head_onwards(submission):
    """split_heads(x [B, T, d_model], H)[b, h, t] == x[b, t, h*d_head:(h+1)*d_head], shape [B, H, T, d_head]."""
    x = inputs.randn(2, 5, 12, salt=31)
    label = "split_heads(x [2, 5, 12], 3)"
    got = run(submission.split_heads, label, x, 3)
    assert_close(got, oracle.split_heads(x, 3), label, HEAD_DIMS, layout="[B, H, T, d_head]",
                 hint="view as [B, T, H, d_head], then transpose the T and H dims", mistakes=split_mistakes(x, 3))


@pytest.mark.points(2)
def test_merge_heads_puts_head_h_at_features_h_times_d_head_onwards(submission):
    """merge_heads(x [B, H, T, d_head])[b, t, h*d_head + e] == x[b, h, t, e], shape [B, T, H * d_head]."""
    x = inputs.randn(2, 3, 5, 4, salt=33)
    label = "merge_heads(x [2, 3, 5, 4])"
    got = run(submission.merge_heads, label, x)
    assert_close(got, oracle.merge_heads(x), label, MODEL_DIMS, layout="[B, T, H * d_head]",
                 hint="transpose(1, 2) to [B, T, H, d_head], then flatten(-2)", mistakes=merge_mistakes(x))


@pytest.mark.points(1)
def test_merge_heads_undoes_split_heads(submission):
    """merge_heads(split_heads(x, H)) == x, and split_heads(x, H) is right on its own."""
    x = inputs.randn(2, 5, 12, salt=32)
    split = run(submission.split_heads, "split_heads(x [2, 5, 12], 4)", x, 4)
    assert_close(split, oracle.split_heads(x, 4), "split_heads(x [2, 5, 12], 4)", HEAD_DIMS,
                 layout="[B, H, T, d_head]", mistakes=split_mistakes(x, 4))
    merged = run(submission.merge_heads, "merge_heads(split_heads(x, 4))", split)
    assert_close(merged, x, "merge_heads(split_heads(x, 4))", MODEL_DIMS,
                 hint="transpose H and T back, then flatten the last two dims (reshape, not view)",
                 mistakes=merge_mistakes(split.contiguous()))
