"""Task `scores`: attention_scores(q, k, scale=None) -> [..., Tq, Tk]."""

import math

import pytest

from tests import inputs, reference
from tests.feedback import assert_close, check_tensor
from tests.mistakes import scale_mistakes

pytestmark = pytest.mark.task("scores")
DIMS = ("b", "h", "i", "j")
HINT = "scores[..., i, j] = (q[..., i, :] . k[..., j, :]) / sqrt(d); use q @ k.transpose(-2, -1)."


@pytest.mark.points(1)
def test_scores_have_one_entry_per_query_and_key(submission):
    """attention_scores(q [B, H, Tq, d], k [B, H, Tk, d]) has shape [B, H, Tq, Tk]."""
    q, k, _ = inputs.qkv(lead=(2, 3), q_len=4, k_len=6, d=8)
    got = submission.attention_scores(q, k)
    check_tensor(got, "attention_scores(q, k)", shape=(2, 3, 4, 6), layout="[B, H, Tq, Tk]", hint=HINT)


@pytest.mark.points(2)
def test_scores_are_dot_products_scaled_by_inverse_sqrt_d(submission):
    """With scale=None, scores = q k^T / sqrt(d)."""
    q, k, _ = inputs.qkv(lead=(2, 3), q_len=5, k_len=5, d=16, salt=1)
    got = submission.attention_scores(q, k)
    assert_close(got, reference.scores(q, k), "attention_scores(q, k)", DIMS, hint=HINT,
                 mistakes=scale_mistakes(q, k))


@pytest.mark.points(1)
def test_scores_use_an_explicit_scale_as_given(submission):
    """attention_scores(q, k, scale=s) multiplies q k^T by s exactly."""
    q, k, _ = inputs.qkv(lead=(2,), q_len=4, k_len=4, d=8, salt=2)
    got = submission.attention_scores(q, k, scale=0.37)
    raw = q @ k.transpose(-2, -1)
    assert_close(got, reference.scores(q, k, scale=0.37), "attention_scores(q, k, scale=0.37)", ("b", "i", "j"),
                 hint="when scale is given, use it instead of 1/sqrt(d)",
                 mistakes={"the scale argument is ignored (always 1/sqrt(d))": raw / math.sqrt(8),
                           "the scale is divided by, not multiplied by": raw / 0.37})
