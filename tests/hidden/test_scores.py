"""Task `scores` (hidden): attention_scores on other shapes, dtypes and layouts, and its input checks."""

import math
import re

import pytest
import torch

from tests.support import inputs, oracle
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import assert_close, assert_unchanged, call, expect_raises, fail
from tests.support.mistakes import explicit_scale_mistakes, scale_mistakes

pytestmark = pytest.mark.task("scores")
DIMS = ("b", "h", "i", "j")
HINT = "scores[..., i, j] = (q[..., i, :] . k[..., j, :]) / sqrt(d); use q @ k.transpose(-2, -1)."
ANY_RANK = ("q @ k.transpose(-2, -1) works for any number of leading dims; einsum('bhid,bhjd->bhij'), bmm "
            "or transpose(2, 3) only work for one particular rank")


@pytest.mark.points(1)
def test_scores_accept_2d_3d_and_5d_inputs(submission):
    """attention_scores works for any number of leading dims: [Tq, d], [B, Tq, d] and [A, B, H, Tq, d]."""
    for lead, salt in (((), 100), ((3,), 101), ((2, 2, 3), 102)):
        q, k, _ = inputs.qkv(lead=lead, q_len=4, k_len=6, d=8, salt=salt)
        label = f"attention_scores(q {tuple(q.shape)}, k {tuple(k.shape)})"
        got = call(submission.attention_scores, label, q, k, hint=ANY_RANK)
        assert_close(got, oracle.scores(q, k), label, DIMS[-2:] if not lead else None,
                     layout="[..., Tq, Tk]", hint=ANY_RANK, mistakes=scale_mistakes(q, k))


@pytest.mark.points(1)
def test_scores_use_an_explicit_scale_of_2_1_and_0(submission):
    """attention_scores(q, k, scale=s) multiplies q k^T by s for any s: 2.0, 1.0 and 0.0 here."""
    q, k, _ = inputs.qkv(lead=(2, 3), q_len=3, k_len=7, d=8, salt=103)
    for scale in (2.0, 1.0, 0.0):  # 0.0 last: reaching it shows that explicit scales are used
        text = f"attention_scores(q, k, scale={scale})"
        got = call(submission.attention_scores, text, q, k, scale=scale)
        assert_close(got, oracle.scores(q, k, scale=scale), text, DIMS, layout="[B, H, Tq, Tk]",
                     hint="when scale is given, use it instead of 1/sqrt(d) (test `scale is None`, not `not scale`)",
                     mistakes=explicit_scale_mistakes(q, k, scale))


@pytest.mark.points(1)
def test_scores_in_float64_are_exact_to_double_precision(submission):
    """float64 inputs give float64 scores, accurate to double precision; q and k stay unchanged."""
    q, k, _ = inputs.qkv(lead=(2, 3), q_len=5, k_len=6, d=12, dtype=torch.float64, salt=104)
    got, measured = submission.measure(submission.attention_scores, q, k)
    raw = q @ k.transpose(-2, -1)
    float32_sqrt = torch.tensor(12.0).sqrt()  # what torch.sqrt(torch.tensor(d)) gives: float32
    divided = ("the scale was computed in float32 (dividing by torch.sqrt(torch.tensor(d)), a float32 "
               "tensor): use math.sqrt(d)")
    multiplied = ("the scale was computed in float32 (multiplying by 1 / torch.sqrt(torch.tensor(d)), a float32 "
                  "tensor): use d ** -0.5")
    mistakes = scale_mistakes(q, k) | {
        divided: raw / float32_sqrt,
        multiplied: raw * (1 / float32_sqrt),
        "the scores were computed in float32: keep the inputs' dtype":
            (q.float() @ k.float().transpose(-2, -1) / math.sqrt(12)).double()}
    assert_close(got, oracle.scores(q, k), "attention_scores(q, k) in float64", DIMS, hint=HINT,
                 mistakes=mistakes)
    assert_unchanged([q, k], measured.args_after[:2], ["q", "k"], "attention_scores")


@pytest.mark.points(1)
def test_scores_of_non_contiguous_inputs(submission):
    """Transposed (non-contiguous) views of q and k give the same scores as contiguous copies."""
    g = inputs.generator(105)
    q = torch.randn(2, 3, 8, 5, generator=g).transpose(-2, -1)  # [2, 3, 5, 8], non-contiguous
    k = torch.randn(3, 2, 6, 8, generator=g).transpose(0, 1)  # [2, 3, 6, 8], non-contiguous
    label = "attention_scores(q, k) with transposed views as q and k"
    got = call(submission.attention_scores, label, q, k,
               hint="view() fails on a transposed tensor: use reshape(), transpose() or matmul directly")
    assert_close(got, oracle.scores(q, k), label, DIMS, hint=HINT, mistakes=scale_mistakes(q, k))


def _names(message, *numbers):
    """True when every number appears in the message as a number of its own."""
    found = {int(n) for n in re.findall(r"\d+", message)}
    return all(number in found for number in numbers)


@pytest.mark.points(1)
def test_scores_reject_q_and_k_with_different_feature_sizes(submission):
    """q [..., Tq, d] and k [..., Tk, d'] with d != d' raise a ValueError naming d and d' (valid inputs still
    give the right scores)."""
    good_q, good_k, _ = inputs.qkv(lead=(2,), q_len=4, k_len=6, d=7, salt=109)
    label = "attention_scores(q (2, 4, 7), k (2, 6, 7))"
    assert_close(call(submission.attention_scores, label, good_q, good_k), oracle.scores(good_q, good_k), label,
                 ("b", "i", "j"), hint=HINT)
    q = inputs.randn(2, 4, 7, salt=107)
    k = inputs.randn(2, 6, 9, salt=108)
    error = expect_raises(lambda: submission.attention_scores(q, k), ValueError,
                          "attention_scores(q (2, 4, 7), k (2, 6, 9))",
                          "q has 7 features and k has 9, so their dot products are undefined",
                          "call the given _check_qk(q, k) first.",
                          wrong_hint="call the given _check_qk(q, k) before the matmul.")
    message = str(error)
    if not _names(message, 7, 9):
        fail(f"attention_scores(q (2, 4, 7), k (2, 6, 9)) raised ValueError({message!r}), which does not "
             "name the two feature sizes 7 and 9.\nHint: call the given _check_qk(q, k) first; its message "
             "shows both shapes.")
