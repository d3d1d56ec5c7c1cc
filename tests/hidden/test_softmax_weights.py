"""Task `softmax_weights` (hidden): broadcasting masks, fully blocked rows and float masks on other shapes
and in float64, gradients in float64, and the mask check."""

import pytest
import torch

from tests.support import inputs, oracle, sweep
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import assert_close, assert_unchanged, call, call_measured, expect_raises, gradients
from tests.support.mistakes import blocked_row_mistakes, float32_precision, float_mask_mistakes, mask_mistakes

pytestmark = pytest.mark.task("softmax_weights")
DIMS = ("b", "h", "i", "j")
NO_NAN = ("find the rows whose keys are all blocked (all -inf after masking), softmax the rest, and "
          "set those rows to 0.0 (torch.where or masked_fill), so they never become NaN")


@pytest.mark.points(1)
def test_a_padding_mask_broadcasts_over_heads_and_queries(submission):
    """A [B, 1, 1, Tk] bool padding mask applies to every head and query of its batch item, on scores around 90
    (exp overflows float32 there: the row max must be subtracted); then 16 configurations of the public sweep's
    space drawn with another seed (every mask shape, by position and keyword, float32 and float64)."""
    scores = 90.0 + 30.0 * inputs.randn(2, 3, 5, 7, salt=113)
    mask = inputs.padding_mask([7, 4], 7)
    label = "attention_weights(scores, padding_mask [2, 1, 1, 7])"
    got, measured = call_measured(submission, submission.attention_weights, label, scores, mask)
    assert_close(got, oracle.softmax_weights(scores, mask), label, DIMS,
                 hint="masked_fill and + broadcast a [B, 1, 1, Tk] mask over heads and queries by themselves",
                 mistakes=mask_mistakes(scores, mask))
    assert_unchanged([scores, mask], measured.args_after[:2], ["scores", "mask"], "attention_weights")
    sweep.run_all("attention_weights over the sweep", sweep.configs(seed=104, count=16),
                  lambda case: sweep.check_weights(submission, case, salt=140), causal=False)


@pytest.mark.points(1)
def test_fully_blocked_rows_give_zeros_in_float64_with_a_broadcast_mask(submission):
    """float64 scores [3, 4, 6] with a [4, 6] bool mask whose rows 1 and 3 are all False: zeros there."""
    scores = inputs.randn(3, 4, 6, dtype=torch.float64, salt=114)
    mask = inputs.random_bool_mask(4, 6, salt=115)
    mask[1] = False
    mask[3] = False
    label = "attention_weights(scores [3, 4, 6] float64, mask [4, 6]) with fully blocked rows"
    got = call(submission.attention_weights, label, scores, mask, hint=NO_NAN)
    assert_close(got, oracle.softmax_weights(scores, mask), label, ("b", "i", "j"), hint=NO_NAN,
                 mistakes=blocked_row_mistakes(scores, mask))


@pytest.mark.points(1)
def test_a_float64_float_mask_is_added_to_the_scores(submission):
    """A float64 [Tq, Tk] additive mask, with a row of -inf, is added to [B, H, Tq, Tk] float64 scores."""
    scores = inputs.randn(2, 2, 4, 6, dtype=torch.float64, salt=116)
    allowed = inputs.random_bool_mask(4, 6, salt=117)
    allowed[2] = False
    mask = inputs.additive_mask(allowed, dtype=torch.float64, salt=118)
    label = "attention_weights(scores float64, float_mask [4, 6] float64)"
    got, measured = call_measured(submission, submission.attention_weights, label, scores, mask, hint=NO_NAN)
    expected = oracle.softmax_weights(scores, mask)
    mistakes = float_mask_mistakes(scores, mask) | {
        "the weights are right to float32 precision only: they were computed in float32 and cast back; "
        "keep float64 throughout": float32_precision(expected)}
    assert_close(got, expected, label, DIMS, hint="a float mask is ADDED: softmax(scores + mask, dim=-1)",
                 mistakes=mistakes)
    assert_unchanged([scores, mask], measured.args_after[:2], ["scores", "mask"], "attention_weights")


@pytest.mark.points(1)
def test_gradients_match_torch_in_float64_with_a_float_mask(submission):
    """d(loss)/d(scores) equals torch's in float64, with an additive mask, then with one that also blocks two rows
    entirely (torch's gradient there is 0.0, not NaN)."""
    scores = inputs.randn(2, 3, 5, 4, dtype=torch.float64, salt=119)
    allowed = inputs.random_bool_mask(2, 3, 5, 4, salt=120)
    cotangent = inputs.randn(2, 3, 5, 4, dtype=torch.float64, salt=122)
    blocking = allowed.clone()
    blocking[1, 2, 3] = False
    blocking[0, 0, 1] = False
    for kind, kept in (("float_mask", allowed), ("float_mask blocking two rows", blocking)):
        mask = inputs.additive_mask(kept, dtype=torch.float64, salt=121)
        label = f"attention_weights(scores float64, {kind})"
        got = call(submission.attention_weights, label, scores, mask)
        assert_close(got, oracle.softmax_weights(scores, mask), label, DIMS, mistakes=float_mask_mistakes(scores, mask),
                     blocked=~kept.any(-1, keepdim=True))
        leaf = scores.clone().requires_grad_(True)
        (expected,) = torch.autograd.grad((oracle.softmax_weights(leaf, mask) * cotangent).sum(), [leaf])
        (grad,) = gradients(submission.attention_weights, label, (scores, mask), [0], [cotangent], ["scores"])
        assert_close(grad, expected, f"d(loss)/d(scores) of {label}", DIMS,
                     hint="use differentiable torch operations only (no NumPy, .detach(), .data or .item()); "
                          "a fully blocked row needs finite scores BEFORE the softmax, or its gradient is NaN")


@pytest.mark.points(1)
def test_a_mask_that_does_not_broadcast_raises_value_error(submission):
    """A mask whose shape does not broadcast to the scores' [..., Tq, Tk] raises ValueError (a mask that
    does still gives the right weights)."""
    scores = inputs.randn(2, 3, 5, 7, salt=124)
    fits = inputs.random_bool_mask(5, 7, salt=125)
    label = "attention_weights(scores [2, 3, 5, 7], mask [5, 7])"
    assert_close(call(submission.attention_weights, label, scores, fits), oracle.softmax_weights(scores, fits),
                 label, DIMS, mistakes=mask_mistakes(scores, fits))
    mask = torch.ones(5, 6, dtype=torch.bool)
    expect_raises(lambda: submission.attention_weights(scores, mask), ValueError,
                  "attention_weights(scores [2, 3, 5, 7], mask [5, 6])", "a [5, 6] mask does not fit 7 keys",
                  "call the given _check_mask(mask, scores) when a mask is given.")
