"""Task `efficiency`: no Python loops over batch, heads or positions, in scaled_dot_product_attention
and in MultiHeadAttention.forward. Each counted call must also return torch's result."""

import pytest
import torch

from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.efficiency import ADVICE, assert_no_loops, mha_count, sdpa_count, shape_text

pytestmark = pytest.mark.task("efficiency")
SDPA_BASE = (2, 2, 8, 16)
SDPA_GROWN = (("the batch", (8, 2, 8, 16)), ("the heads", (2, 8, 8, 16)), ("the positions", (2, 2, 64, 16)),
              ("the positions", (1, 1, 512, 16)))
MHA_BASE = (2, 8, 32, 2)
MHA_GROWN = (("the batch", (6, 8, 32, 2)), ("the heads", (2, 8, 32, 8)), ("the positions", (2, 32, 32, 2)),
             ("the positions", (1, 512, 32, 2)))


@pytest.mark.points(2)
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


def every_other_row_blocked(shape):
    """A bool [T, T] mask whose odd query rows see no key: the number of fully blocked rows grows with T."""
    length = shape[2]
    mask = torch.ones(length, length, dtype=torch.bool)
    mask[1::2] = False
    return mask


@pytest.mark.points(1)
def test_sdpa_with_blocked_rows_runs_the_same_operations(submission):
    """scaled_dot_product_attention(q, k, v, mask) with half of the query rows fully blocked is right and runs the
    same number of operations whether 4, 32 or 256 rows are blocked: the blocked rows are zeroed all at once."""
    base = sdpa_count(submission, SDPA_BASE, salt=67, make_mask=every_other_row_blocked)
    grown = [(dim, shape_text("BHTd", shape), sdpa_count(submission, shape, salt=68 + n,
                                                          make_mask=every_other_row_blocked))
             for n, (dim, shape) in enumerate(SDPA_GROWN[2:])]
    assert_no_loops("scaled_dot_product_attention(q, k, v, mask) with every other query row blocked",
                    (shape_text("BHTd", SDPA_BASE), base), grown,
                    advice=ADVICE + " A loop over the fully blocked rows (to zero them) is a loop over positions too: "
                                    "zero them all with one masked_fill or torch.where.")
