"""Task `softmax_weights`: attention_weights(scores, mask=None) -> [..., Tq, Tk]."""

import pytest
import torch

from tests import inputs, reference
from tests.feedback import assert_close, assert_zero_where, fail

pytestmark = pytest.mark.task("softmax_weights")
DIMS = ("b", "h", "i", "j")


def mask_mistakes(scores, mask):
    plain = torch.softmax(scores, dim=-1)
    return {
        "the bool mask is inverted: True means ALLOWED (torch's convention), so block where it is False":
            reference.softmax_weights(scores, ~mask),
        "the mask is applied after the softmax: block with -inf before it, so each row sums to 1":
            plain * mask,
        "blocked scores are set to 0 instead of -inf: exp(0) = 1 still gives them weight":
            torch.softmax(scores.masked_fill(~mask, 0.0), dim=-1),
    }


@pytest.mark.points(3)
def test_weights_are_a_softmax_over_the_keys(submission):
    """Without a mask, weights = softmax(scores) over the last dim: each row sums to 1."""
    scores = inputs.randn(2, 3, 5, 7, salt=10)
    got = submission.attention_weights(scores)
    assert_close(got, torch.softmax(scores, dim=-1), "attention_weights(scores)", DIMS,
                 hint="softmax over dim=-1 (the keys)",
                 mistakes={"softmax over the wrong dim: use dim=-1, the keys": torch.softmax(scores, dim=-2)})


@pytest.mark.points(2)
def test_blocked_keys_get_exactly_zero_weight(submission):
    """Where the bool mask is False, the weight is exactly 0.0."""
    scores = inputs.randn(2, 3, 5, 7, salt=11)
    mask = inputs.random_bool_mask(2, 3, 5, 7, salt=11)
    got = submission.attention_weights(scores, mask)
    if not isinstance(got, torch.Tensor) or got.shape != scores.shape:
        fail(f"attention_weights(scores, mask) should have the scores' shape {tuple(scores.shape)}")
    assert_zero_where(got, ~mask, "attention_weights(scores, mask)", DIMS,
                      hint="fill blocked scores with float('-inf') before the softmax; True = allowed.")


@pytest.mark.points(2)
def test_allowed_keys_share_all_the_weight(submission):
    """With a bool mask, weights equal the softmax over the allowed keys only."""
    scores = inputs.randn(2, 3, 5, 7, salt=12)
    mask = inputs.random_bool_mask(2, 3, 5, 7, salt=12)
    got = submission.attention_weights(scores, mask)
    assert_close(got, reference.softmax_weights(scores, mask), "attention_weights(scores, mask)", DIMS,
                 hint="scores.masked_fill(~mask, float('-inf')), then softmax(dim=-1)",
                 mistakes=mask_mistakes(scores, mask))
