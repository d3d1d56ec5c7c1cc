"""Task `softmax_weights`: attention_weights(scores, mask=None) -> [..., Tq, Tk]."""

import pytest
import torch

from tests.support import inputs, oracle, sweep
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import (
    assert_close,
    assert_unchanged,
    assert_zero_where,
    call_measured,
    fail,
    gradients,
)
from tests.support.mistakes import blocked_row_mistakes, float_mask_mistakes, mask_mistakes

pytestmark = pytest.mark.task("softmax_weights")
DIMS = ("b", "h", "i", "j")
NO_NAN = ("find the rows whose keys are all blocked (all -inf after masking), softmax the rest, and "
          "set those rows to 0.0 (torch.where or masked_fill), so they never become NaN")


def weights(submission, label, scores, mask=None, hint=None):
    """attention_weights(scores, mask) on the submission, the arguments passed positionally (so that
    the Measurement's args_after shows what it did to them): (weights, Measurement)."""
    args = (scores,) if mask is None else (scores, mask)
    return call_measured(submission, submission.attention_weights, label, *args, hint=hint)


@pytest.mark.points(1)
def test_weights_are_a_softmax_over_the_keys(submission):
    """Without a mask, weights = softmax(scores) over the last dim (each row sums to 1); scores stay unchanged."""
    scores = inputs.randn(2, 3, 5, 7, salt=10)
    label = "attention_weights(scores [2, 3, 5, 7])"
    got, measured = weights(submission, label, scores)
    assert_close(got, torch.softmax(scores, dim=-1), label, DIMS, hint="softmax over dim=-1 (the keys)",
                 mistakes=mask_mistakes(scores))
    assert_unchanged([scores], measured.args_after[:1], ["scores"], "attention_weights")


@pytest.mark.points(1)
def test_large_scores_give_finite_weights(submission):
    """Scores around 100 (exp(100) overflows float32 to inf) still give torch's weights: no inf, no NaN."""
    scores = 100.0 + 40.0 * inputs.randn(2, 3, 5, 7, salt=20)
    label = "attention_weights(scores [2, 3, 5, 7] with values up to ~200, float32)"
    got, _ = weights(submission, label, scores)
    assert_close(got, oracle.softmax_weights(scores), label, DIMS, mistakes=mask_mistakes(scores),
                 hint="softmax(s) = exp(s - max(s)) / sum(exp(s - max(s))): torch.softmax subtracts the row max")


@pytest.mark.points(1)
def test_a_bool_mask_gives_blocked_keys_exactly_zero_weight(submission):
    """With a bool mask (True = allowed), weights are the softmax over the allowed keys, exactly 0.0 where
    the mask is False; scores and mask stay unchanged."""
    scores = inputs.randn(2, 3, 5, 7, salt=11)
    mask = inputs.random_bool_mask(2, 3, 5, 7, salt=11)
    label = "attention_weights(scores, bool_mask)"
    got, measured = weights(submission, label, scores, mask)
    assert_close(got, oracle.softmax_weights(scores, mask), label, DIMS,
                 hint="scores.masked_fill(~mask, float('-inf')), then softmax(dim=-1)",
                 mistakes=mask_mistakes(scores, mask), blocked=~mask.any(-1, keepdim=True))
    assert_zero_where(got, ~mask, label, DIMS, hint="block with float('-inf') before the softmax")
    assert_unchanged([scores, mask], measured.args_after[:2], ["scores", "mask"], "attention_weights")


@pytest.mark.points(2)
def test_a_float_mask_is_added_to_the_scores(submission):
    """A floating mask is added to the scores before the softmax (-inf blocks, finite values shift); scores
    and mask stay unchanged."""
    scores = inputs.randn(2, 3, 5, 7, salt=12)
    allowed = inputs.random_bool_mask(2, 3, 5, 7, salt=12)
    mask = inputs.additive_mask(allowed, salt=13)
    label = "attention_weights(scores, float_mask)"
    got, measured = weights(submission, label, scores, mask)
    assert_close(got, oracle.softmax_weights(scores, mask), label, DIMS,
                 hint="a float mask is ADDED: softmax(scores + mask, dim=-1)",
                 mistakes=float_mask_mistakes(scores, mask), blocked=~allowed.any(-1, keepdim=True))
    assert_unchanged([scores, mask], measured.args_after[:2], ["scores", "mask"], "attention_weights")


@pytest.mark.points(2)
def test_fully_blocked_rows_give_zeros_not_nan(submission):
    """A query row whose keys are all blocked (bool mask all False, or float mask all -inf) gets all-zero
    weights, not NaN and not 1/Tk."""
    scores = inputs.randn(2, 2, 4, 6, salt=14)
    allowed = inputs.random_bool_mask(2, 2, 4, 6, salt=15)
    allowed[0, 1, 2] = False
    allowed[1, :, 0] = False
    for kind, mask in (("bool_mask", allowed), ("float_mask", inputs.additive_mask(allowed, salt=16))):
        label = f"attention_weights(scores, {kind}) with fully blocked rows"
        got, _ = weights(submission, label, scores, mask, hint=NO_NAN)
        blocked = ~allowed.any(-1, keepdim=True)
        assert_close(got, oracle.softmax_weights(scores, mask), label, DIMS, hint=NO_NAN,
                     mistakes=blocked_row_mistakes(scores, mask), blocked=blocked)
    check_blocked_row_gradients(submission, label, scores, mask, blocked)


def check_blocked_row_gradients(submission, label, scores, mask, blocked):
    """d(loss)/d(scores) equals torch's, finite on the fully blocked rows (torch's gradient is 0 there)."""
    cotangent = inputs.randn(*scores.shape, salt=21)
    leaf = scores.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad((oracle.softmax_weights(leaf, mask) * cotangent).sum(), [leaf])
    (grad,) = gradients(submission.attention_weights, label, (scores, mask), [0], [cotangent], ["scores"])
    nan = torch.isnan(grad) & ~torch.isnan(expected) if isinstance(grad, torch.Tensor) else None
    if nan is not None and nan.any() and bool((nan <= blocked.expand_as(nan)).all()):
        first = [int(i) for i in nan.nonzero()[0]]
        fail(f"d(loss)/d(scores) of {label} is NaN at {first} ({int(nan.sum())} entries), all in fully blocked rows; "
             "torch's gradient there is 0.0.\nLikely cause: the forward values of those rows are zeros, but the "
             "backward pass still goes through a NaN there (softmax(-inf, ..., -inf) or 0/0; torch.where, nan_to_num "
             "or masked_fill after it hide it only from the forward values): make those rows' scores finite BEFORE "
             "the softmax, then zero them after it")
    assert_close(grad, expected, f"d(loss)/d(scores) of {label}", DIMS,
                 hint="use differentiable torch operations only (no NumPy, .detach(), .data or .item())")


@pytest.mark.points(1)
def test_float64_scores_give_float64_weights_at_double_precision(submission):
    """float64 scores and a bool mask give float64 weights, accurate to double precision."""
    scores = inputs.randn(2, 3, 4, 5, dtype=torch.float64, salt=17)
    mask = inputs.random_bool_mask(2, 3, 4, 5, salt=17)
    label = "attention_weights(scores, bool_mask) in float64"
    got, _ = weights(submission, label, scores, mask)
    expected = oracle.softmax_weights(scores, mask)
    assert_close(got, expected, label, DIMS, hint="keep the scores' dtype throughout: no .float(), no dtype= in softmax",
                 mistakes=mask_mistakes(scores, mask))


@pytest.mark.points(1)
def test_gradients_flow_back_to_the_scores(submission):
    """The weights are differentiable: d(loss)/d(scores) equals torch's for a bool mask."""
    scores = inputs.randn(2, 4, 6, salt=18)
    mask = inputs.random_bool_mask(2, 4, 6, salt=18)
    cotangent = inputs.randn(2, 4, 6, salt=19)
    label = "attention_weights(scores [2, 4, 6], bool_mask)"
    got, _ = weights(submission, label, scores, mask)
    assert_close(got, oracle.softmax_weights(scores, mask), label, ("b", "i", "j"),
                 hint="scores.masked_fill(~mask, float('-inf')), then softmax(dim=-1)",
                 mistakes=mask_mistakes(scores, mask))
    leaf = scores.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad((oracle.softmax_weights(leaf, mask) * cotangent).sum(), [leaf])
    (grad,) = gradients(submission.attention_weights, label, (scores, mask), [0], [cotangent], ["scores"])
    assert_close(grad, expected, f"d(loss)/d(scores) of {label}", ("b", "i", "j"),
                 hint="use differentiable torch operations only (no NumPy, .detach(), .data or .item())")



@pytest.mark.points(1)
def test_weights_over_a_seeded_sweep_of_masks_shapes_and_dtypes(submission):
    """attention_weights equals torch's on 16 configurations drawn (seeded) from: batch 1, one head, Tq = 1,
    Tq != Tk, bool and float masks of every broadcast shape ([Tk], [Tq, Tk], [B, 1, 1, Tk], [B, 1, Tq, Tk],
    [1, H, Tq, Tk], [B, H, Tq, Tk]) by position and by keyword, rows with no allowed key, float32 and float64."""
    sweep.run_all("attention_weights over the sweep", sweep.configs(seed=4, count=16),
                  lambda case: sweep.check_weights(submission, case, salt=22), causal=False)
