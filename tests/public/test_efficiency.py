"""Task `efficiency`: no Python loops over batch, heads or positions."""

import pytest

from tests import inputs
from tests.efficiency import assert_no_loops, op_count

pytestmark = pytest.mark.task("efficiency")


@pytest.mark.points(4)
def test_sdpa_runs_the_same_operations_at_every_shape(submission):
    """scaled_dot_product_attention's operation count does not grow with B, H or T."""
    sdpa = submission.scaled_dot_product_attention
    small = op_count(submission, sdpa, *inputs.qkv(lead=(2, 2), q_len=8, k_len=8, d=16), is_causal=True)
    large = op_count(submission, sdpa, *inputs.qkv(lead=(4, 8), q_len=64, k_len=64, d=16), is_causal=True)
    assert_no_loops("scaled_dot_product_attention", small, large, (2, 2, 8, 16), (4, 8, 64, 16))
