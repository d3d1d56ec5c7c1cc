"""Task `efficiency` (hidden): no Python loops with bool and padding masks, in the masked softmax, or in
MultiHeadAttention's masked cross-attention. Each counted call must also return torch's result."""

import pytest

from tests.support import inputs, oracle
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.efficiency import VALUES_FIRST, assert_no_loops, counted, mha_count, sdpa_count, shape_text
from tests.support.feedback import assert_close

pytestmark = pytest.mark.task("efficiency")
BASE = (2, 3, 6, 8)
GROWN = (("the batch", (5, 3, 6, 8)), ("the heads", (2, 12, 6, 8)), ("the positions", (2, 3, 48, 8)),
         ("the positions", (1, 1, 512, 8)))


def bool_mask(shape):
    """A random [B, H, T, T] bool mask whose every third query row is fully blocked: the number of such rows grows
    with T, so a loop over them shows in the count."""
    batch, heads, length, _ = shape
    mask = inputs.random_bool_mask(batch, heads, length, length, salt=length + heads)
    mask[..., 2::3, :] = False
    return mask


def sdpa_counts(submission, salt, make_mask):
    base = sdpa_count(submission, BASE, salt=salt, make_mask=make_mask)
    grown = [(dim, shape_text("BHTd", shape), sdpa_count(submission, shape, salt=salt + 1 + n, make_mask=make_mask))
             for n, (dim, shape) in enumerate(GROWN)]
    return (shape_text("BHTd", BASE), base), grown


@pytest.mark.points(1)
def test_sdpa_with_a_bool_mask_runs_the_same_operations_at_every_shape(submission):
    """scaled_dot_product_attention with a [B, H, T, T] bool mask: right, and a constant operation count."""
    base, grown = sdpa_counts(submission, 212, bool_mask)
    assert_no_loops("scaled_dot_product_attention(q, k, v, mask=bool_mask)", base, grown)


@pytest.mark.points(1)
def test_sdpa_with_a_padding_mask_runs_the_same_operations_at_every_shape(submission):
    """scaled_dot_product_attention with a [B, 1, 1, Tk] padding mask: right, and a constant operation count."""
    base, grown = sdpa_counts(submission, 216, lambda shape: inputs.padding_mask(
        [max(1, shape[2] - 2 * b) for b in range(shape[0])], shape[2]))
    assert_no_loops("scaled_dot_product_attention(q, k, v, mask=padding_mask)", base, grown)


@pytest.mark.points(1)
def test_attention_weights_runs_the_same_operations_at_every_shape(submission):
    """attention_weights(scores, bool_mask): right, and a constant operation count."""

    def weights_count(shape, salt):
        scores = inputs.randn(*shape[:3], shape[2], salt=salt)
        mask = bool_mask(shape)
        label = f"attention_weights(scores, mask) at {shape_text('BHT', shape)}"
        got, count = counted(submission, submission.attention_weights, label, scores, mask)
        assert_close(got, oracle.softmax_weights(scores, mask), label, hint=VALUES_FIRST)
        return count

    base = weights_count(BASE, 220)
    grown = [(dim, shape_text("BHT", shape), weights_count(shape, 221 + n)) for n, (dim, shape) in enumerate(GROWN)]
    assert_no_loops("attention_weights(scores, mask)", (shape_text("BHT", BASE), base), grown)


@pytest.mark.points(1)
def test_mha_masked_cross_attention_runs_the_same_operations_at_every_shape(submission):
    """MultiHeadAttention.forward(query, key, value, mask=padding_mask): right, and a constant count."""
    names = ("B", "T", "d_model", "H")
    base_shape = (2, 5, 24, 3)
    grown_shapes = (("the batch", (5, 5, 24, 3)), ("the heads", (2, 5, 24, 12)), ("the positions", (2, 30, 24, 3)))

    def key_padding(shape):
        batch, length = shape[0], shape[1] + 3
        return inputs.padding_mask([length - b for b in range(batch)], length)

    base = mha_count(submission, base_shape, salt=225, make_mask=key_padding, cross=True)
    grown = [(dim, shape_text(names, shape), mha_count(submission, shape, salt=226 + n, make_mask=key_padding,
                                                       cross=True))
             for n, (dim, shape) in enumerate(grown_shapes)]
    assert_no_loops("MultiHeadAttention.forward(query, key, value, mask=padding_mask)",
                    (shape_text(names, base_shape), base), grown)
