"""Task `efficiency`: no Python loops over batch, heads or positions, in scaled_dot_product_attention
and in MultiHeadAttention.forward. Each counted call must also return torch's result."""

import pytest

from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.efficiency import assert_no_loops, mha_count, sdpa_count, shape_text

pytestmark = pytest.mark.task("efficiency")
SDPA_BASE = (2, 2, 8, 16)
SDPA_GROWN = (("the batch", (8, 2, 8, 16)), ("the heads", (2, 8, 8, 16)), ("the positions", (2, 2, 64, 16)),
              ("the positions", (1, 1, 512, 16)))
MHA_BASE = (2, 8, 32, 2)
MHA_GROWN = (("the batch", (6, 8, 32, 2)), ("the heads", (2, 8, 32, 8)), ("the positions", (2, 32, 32, 2)),
             ("the positions", (1, 512, 32, 2)))


@pytest.mark.points(3)
def test_sdpa_runs_the_same_operations_at_every_shape(submission):
    """scaled_dot_product_attention(q, k, v, is_causal=True) is right and its operation count does not
    grow with B, H or T."""
    base = sdpa_count(submission, SDPA_BASE, salt=60, is_causal=True)
    grown = [(dim, shape_text("BHTd", shape), sdpa_count(submission, shape, salt=61 + n, is_causal=True))
             for n, (dim, shape) in enumerate(SDPA_GROWN)]
    assert_no_loops("scaled_dot_product_attention(q, k, v, is_causal=True)", (shape_text("BHTd", SDPA_BASE), base),
                    grown)


@pytest.mark.points(3)
def test_mha_forward_runs_the_same_operations_at_every_shape(submission):
    """MultiHeadAttention.forward(x, is_causal=True) is right and its operation count does not grow with
    B, T or H."""
    names = ("B", "T", "d_model", "H")
    base = mha_count(submission, MHA_BASE, salt=65, is_causal=True)
    grown = [(dim, shape_text(names, shape), mha_count(submission, shape, salt=66 + n, is_causal=True))
             for n, (dim, shape) in enumerate(MHA_GROWN)]
    assert_no_loops("MultiHeadAttention.forward(x, is_causal=True)", (shape_text(names, MHA_BASE), base), grown)
