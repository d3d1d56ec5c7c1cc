"""Task `heads`: split_heads(x, n_heads) and merge_heads(x)."""

import pytest

from tests import inputs, reference
from tests.feedback import assert_close, check_tensor
from tests.mistakes import split_mistakes

pytestmark = pytest.mark.task("heads")
HEAD_DIMS = ("b", "h", "t", "e")


@pytest.mark.points(1)
def test_split_heads_shape(submission):
    """split_heads([B, T, d_model], H) has shape [B, H, T, d_model // H]."""
    x = inputs.randn(2, 5, 12, salt=30)
    check_tensor(submission.split_heads(x, 3), "split_heads(x, 3)", shape=(2, 3, 5, 4), layout="[B, H, T, d_head]",
                 hint="view as [B, T, H, d_head], then transpose the T and H dims")


@pytest.mark.points(2)
def test_head_h_holds_features_h_times_d_head_onwards(submission):
    """split_heads(x, H)[b, h, t] == x[b, t, h*d_head:(h+1)*d_head]."""
    x = inputs.randn(2, 5, 12, salt=31)
    assert_close(submission.split_heads(x, 3), reference.split_heads(x, 3), "split_heads(x, 3)", HEAD_DIMS,
                 mistakes=split_mistakes(x, 3))


@pytest.mark.points(1)
def test_merge_heads_undoes_split_heads(submission):
    """merge_heads(split_heads(x, H)) == x."""
    x = inputs.randn(2, 5, 12, salt=32)
    merged = submission.merge_heads(submission.split_heads(x, 3))
    assert_close(merged, x, "merge_heads(split_heads(x, 3))", ("b", "t", "f"),
                 hint="transpose H and T back, then flatten the last two dims (reshape, not view)")
