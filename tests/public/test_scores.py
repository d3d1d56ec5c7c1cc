"""Task `scores`: attention_scores(q, k, scale=None) -> [..., Tq, Tk]."""

import pytest

from tests.support import inputs, oracle
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import assert_close, assert_unchanged, call, call_measured
from tests.support.mistakes import explicit_scale_mistakes, scale_mistakes

pytestmark = pytest.mark.task("scores")
DIMS = ("b", "h", "i", "j")
HINT = "scores[..., i, j] = (q[..., i, :] . k[..., j, :]) / sqrt(d); use q @ k.transpose(-2, -1)."


def second_call(submission, lead, q_len, k_len, d, salt, scale=None):
    """A second, independent call (other sizes, none equal to or the square of another): what a cause named on
    the first call must explain too. (got, expected, mistakes)"""
    q, k, _ = inputs.qkv(lead=lead, q_len=q_len, k_len=k_len, d=d, salt=salt)
    shapes = f"q [{', '.join(map(str, q.shape))}], k [{', '.join(map(str, k.shape))}]"
    label = f"attention_scores({shapes}{'' if scale is None else f', scale={scale}'})"
    got = call(submission.attention_scores, label, q, k, **({} if scale is None else {"scale": scale}))
    return got, oracle.scores(q, k, scale=scale), explicit_scale_mistakes(q, k, scale)


@pytest.mark.points(2)
def test_scores_are_dot_products_scaled_by_inverse_sqrt_d(submission):
    """With scale=None, scores = q k^T / sqrt(d), shape [B, H, Tq, Tk], and q and k are left unchanged. The sizes
    (B=2, H=3, Tq=5, Tk=7, d=12) are all different and none is the square of another, so that no two wrong
    scales give the same numbers."""
    q, k, _ = inputs.qkv(lead=(2, 3), q_len=5, k_len=7, d=12, salt=1)
    label = "attention_scores(q [2, 3, 5, 12], k [2, 3, 7, 12])"
    got, measured = call_measured(submission, submission.attention_scores, label, q, k, hint=HINT)
    assert_close(got, oracle.scores(q, k), label, DIMS, layout="[B, H, Tq, Tk]", hint=HINT,
                 mistakes=scale_mistakes(q, k).confirmed_by(
                     lambda: second_call(submission, (3, 2), q_len=11, k_len=6, d=10, salt=4)))
    assert_unchanged([q, k], measured.args_after[:2], ["q", "k"], "attention_scores")


@pytest.mark.points(2)
def test_scores_use_an_explicit_scale_as_given_even_0(submission):
    """attention_scores(q, k, scale=s) multiplies q k^T by s exactly, for s = 0.37 and s = 0.0; 3-D inputs here."""
    q, k, _ = inputs.qkv(lead=(2,), q_len=4, k_len=5, d=8, salt=2)
    for scale in (0.37, 0.0):  # 0.37 first: at 0.0, a result of 1/sqrt(d) then means 0.0 was read as None
        label = f"attention_scores(q [2, 4, 8], k [2, 5, 8], scale={scale})"
        got = call(submission.attention_scores, label, q, k, scale=scale, hint=HINT)
        assert_close(got, oracle.scores(q, k, scale=scale), label, ("b", "i", "j"), layout="[B, Tq, Tk]",
                     hint="when scale is given, multiply by it instead of 1/sqrt(d) (test `scale is None`)",
                     mistakes=explicit_scale_mistakes(q, k, scale).confirmed_by(
                         lambda scale=scale: second_call(submission, (3,), q_len=6, k_len=11, d=10, salt=5,
                                                         scale=scale)))


@pytest.mark.points(1)
def test_scores_pair_each_head_s_queries_with_the_same_head_s_keys(submission):
    """With [B, H, T, d] inputs, scores[b, h] uses only q[b, h] and k[b, h] (here H = Tk = d = 4)."""
    q, k, _ = inputs.qkv(lead=(2, 4), q_len=5, k_len=4, d=4, salt=3)
    label = "attention_scores(q [2, 4, 5, 4], k [2, 4, 4, 4])"
    got = call(submission.attention_scores, label, q, k, hint=HINT)
    assert_close(got, oracle.scores(q, k), label, DIMS, layout="[B, H, Tq, Tk]", hint=HINT,
                 mistakes=scale_mistakes(q, k))
