"""Task `causal_mask`: causal_mask(seq_len) -> bool [T, T], True where key j <= query i."""

import pytest

from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import call
from tests.support.mistakes import check_causal_mask

pytestmark = pytest.mark.task("causal_mask")


@pytest.mark.points(3)
def test_causal_mask_is_the_bool_lower_triangle(submission):
    """causal_mask(6) is the bool [6, 6] lower triangle: True where key j <= query i (the diagonal included),
    False in the future (j > i)."""
    check_causal_mask(call(submission.causal_mask, "causal_mask(6)", 6), 6)


@pytest.mark.points(2)
def test_causal_mask_of_other_lengths(submission):
    """causal_mask(T) is the bool [T, T] lower triangle for T = 1, 2 and 3 as well."""
    for seq_len in (1, 2, 3):
        check_causal_mask(call(submission.causal_mask, f"causal_mask({seq_len})", seq_len), seq_len)
