"""Task `divisibility`: DimensionMismatchError when d_model is not a multiple of n_heads, raised by both
MultiHeadAttention(d_model, n_heads) and split_heads(x, n_heads), and only then."""

import pytest

from tests.support import inputs
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.divisibility import (
    MHA_CHECK,
    SPLIT_CHECK,
    assert_message_names,
    constructs,
    raised_dimension_mismatch,
)

pytestmark = pytest.mark.task("divisibility")


@pytest.mark.points(1)
def test_mha_with_16_features_and_5_heads_raises_dimension_mismatch(submission):
    """MultiHeadAttention(16, 5) raises the lab's DimensionMismatchError; MultiHeadAttention(16, 4) does not."""
    raised_dimension_mismatch(submission, lambda: submission.MultiHeadAttention(16, 5), "MultiHeadAttention(16, 5)",
                              16, 5, MHA_CHECK)
    constructs(lambda: submission.MultiHeadAttention(16, 4), "MultiHeadAttention(16, 4)", 16, 4)


@pytest.mark.points(1)
def test_split_heads_with_16_features_and_5_heads_raises_dimension_mismatch(submission):
    """split_heads(x [B, T, 16], 5) raises the lab's DimensionMismatchError; split_heads(x, 4) does not."""
    x = inputs.randn(2, 3, 16, salt=35)
    raised_dimension_mismatch(submission, lambda: submission.split_heads(x, 5), "split_heads(x [2, 3, 16], 5)",
                              16, 5, SPLIT_CHECK)
    constructs(lambda: submission.split_heads(x, 4), "split_heads(x [2, 3, 16], 4)", 16, 4, shape=tuple(x.shape))


@pytest.mark.points(1)
def test_dimension_mismatch_message_names_d_model_and_n_heads(submission):
    """Both DimensionMismatchError messages name d_model (16) and n_heads (5), in any wording."""
    x = inputs.randn(2, 3, 16, salt=36)
    for make, text, missing_check in ((lambda: submission.MultiHeadAttention(16, 5), "MultiHeadAttention(16, 5)",
                                       MHA_CHECK),
                                      (lambda: submission.split_heads(x, 5), "split_heads(x [2, 3, 16], 5)",
                                       SPLIT_CHECK)):
        error = raised_dimension_mismatch(submission, make, text, 16, 5, missing_check)
        assert_message_names(error, text, 16, 5)
