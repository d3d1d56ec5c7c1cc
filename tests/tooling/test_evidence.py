"""A cause is named only when the evidence proves it: the public tests' sizes keep every candidate cause apart,
a cause must also explain a second, independent input, and an error is shown at the student's own line."""

import itertools

import torch

from tests.support import hypotheses, inputs, oracle
from tests.support.feedback import CLEARLY, diagnose, distance, student_frame


def pairwise_apart(candidates):
    """[(cause, cause)] of candidates that no failure could tell apart (within CLEARLY tolerances)."""
    close = []
    for (a, x), (b, y) in itertools.combinations(candidates.items(), 2):
        found = distance(x, y if not isinstance(y, tuple) or len(y) != 2 or not isinstance(y[1], torch.dtype)
                         else y[0])
        if found is not None and found[0] < CLEARLY:
            close.append((a[:60], b[:60]))
    return close


def test_the_public_scores_sizes_keep_every_wrong_scale_apart():
    """B=2, H=3, Tq=5, Tk=7, d=12 (and the second call's 3, 2, 11, 6, 10): no two scores variants agree."""
    for lead, q_len, k_len, d in (((2, 3), 5, 7, 12), ((3, 2), 11, 6, 10)):
        q, k, _ = inputs.qkv(lead=lead, q_len=q_len, k_len=k_len, d=d, salt=1)
        found = {cause: result.value for cause, result in hypotheses.results("scores", q=q, k=k).items()}
        assert "integer square root" in " ".join(found)
        assert pairwise_apart({**found, "correct": oracle.scores(q, k)}) == []


def test_the_old_sizes_made_isqrt_look_like_sqrt_tq():
    """The reason for the change: with Tq=4 and d=8, 1/isqrt(8) = 1/sqrt(4)."""
    q, k, _ = inputs.qkv(lead=(2, 3), q_len=4, k_len=6, d=8, salt=1)
    isqrt = (q.double() @ k.double().transpose(-2, -1) / 2).float()
    found = {cause: result.value for cause, result in hypotheses.results("scores", q=q, k=k).items()}
    assert diagnose(isqrt, oracle.scores(q, k), found) is None  # two causes fit: neither is named


def test_a_cause_is_named_only_when_a_second_input_confirms_it():
    q, k, _ = inputs.qkv(lead=(2, 3), q_len=5, k_len=7, d=12, salt=1)
    q2, k2, _ = inputs.qkv(lead=(3, 2), q_len=11, k_len=6, d=10, salt=4)
    unscaled, unscaled2 = (x.double() @ y.double().transpose(-2, -1) for x, y in ((q, k), (q2, k2)))
    mistakes = hypotheses.as_mistakes("scores", q=q, k=k)
    expected, expected2 = oracle.scores(q, k), oracle.scores(q2, k2)
    second_mistakes = hypotheses.as_mistakes("scores", q=q2, k=k2)
    confirmed = mistakes.confirmed_by(lambda: (unscaled2.float(), expected2, second_mistakes))
    assert "not scaled" in diagnose(unscaled.float(), expected, confirmed)
    refuted = mistakes.confirmed_by(lambda: (expected2 * 3, expected2, second_mistakes))
    assert diagnose(unscaled.float(), expected, refuted) is None


TRACE = '''Traceback (most recent call last):
  File "/grader/worker.py", line 114, in op_call
    result = func(*args, **kwargs)
  File "/scratch/attention.py", line 150, in merge_heads
    _check_tensor(x, "x", min_dim=5)
  File "/scratch/attention.py", line 420, in _check_tensor
    raise ValueError(f"{name} must have at least {min_dim} dims, got shape {tuple(x.shape)}")
ValueError: x must have at least 5 dims, got shape (2, 3, 4, 5)
'''


def test_an_error_raised_in_a_given_check_is_shown_at_the_student_s_line():
    remote = {"line": 420, "code": "raise ValueError(...)", "traceback": TRACE}
    where = student_frame(remote)
    assert "line 150, in merge_heads" in where and "_check_tensor(x" in where
    assert "given check _check_tensor" in where and "line 420" not in where
