"""Task `divisibility` (hidden): other sizes (30 features, 4 heads; more heads than features), the
messages, valid head counts, and DimensionMismatchError being a ValueError."""

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
from tests.support.feedback import fail

pytestmark = pytest.mark.task("divisibility")


@pytest.mark.points(1)
def test_other_sizes_raise_dimension_mismatch_naming_both_numbers(submission):
    """MultiHeadAttention(30, 4), split_heads(x [.., 30], 4) and MultiHeadAttention(4, 8) raise
    DimensionMismatchError naming both numbers."""
    x = inputs.randn(3, 2, 30, salt=170)
    cases = ((lambda: submission.MultiHeadAttention(30, 4), "MultiHeadAttention(30, 4)", 30, 4, MHA_CHECK),
             (lambda: submission.split_heads(x, 4), "split_heads(x [3, 2, 30], 4)", 30, 4, SPLIT_CHECK),
             (lambda: submission.MultiHeadAttention(4, 8), "MultiHeadAttention(4, 8)", 4, 8, MHA_CHECK))
    for make, text, d_model, n_heads, missing_check in cases:
        error = raised_dimension_mismatch(submission, make, text, d_model, n_heads, missing_check)
        assert_message_names(error, text, d_model, n_heads)


@pytest.mark.points(1)
def test_valid_head_counts_construct_and_the_error_is_a_value_error(submission):
    """MultiHeadAttention(24, H) and split_heads(x, H) work for H = 1, 6, 24; MultiHeadAttention(24, 7)'s
    DimensionMismatchError is caught by `except ValueError`."""
    x = inputs.randn(2, 3, 24, salt=171)
    for n_heads in (1, 6, 24):
        constructs(lambda: submission.MultiHeadAttention(24, n_heads), f"MultiHeadAttention(24, {n_heads})",
                   24, n_heads)
        constructs(lambda: submission.split_heads(x, n_heads), f"split_heads(x [2, 3, 24], {n_heads})",
                   24, n_heads, shape=tuple(x.shape))
    error = raised_dimension_mismatch(submission, lambda: submission.MultiHeadAttention(24, 7),
                                      "MultiHeadAttention(24, 7)", 24, 7, MHA_CHECK)
    if not isinstance(error, ValueError):
        fail(f"MultiHeadAttention(24, 7) raised {type(error).__name__}, which `except ValueError` does not catch.\n"
             "Hint: keep `class DimensionMismatchError(ValueError)` as given, and raise it.")
