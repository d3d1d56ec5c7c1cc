"""Task `softmax_weights` (hidden): float masks, broadcasting masks, fully blocked rows, float64 and checks."""

import pytest
import torch

from tests import inputs, reference
from tests.feedback import assert_close, assert_unchanged, assert_zero_where, fail

pytestmark = pytest.mark.task("softmax_weights")
DIMS = ("b", "h", "i", "j")
NO_NAN = ("find the rows whose keys are all blocked (all -inf after masking), softmax the rest, and "
          "set those rows to 0.0 (torch.where or masked_fill), so they never become NaN")


def uniform_row_mistake(scores, mask):
    """What blocking with finfo.min (or -1e9) instead of -inf gives: uniform weights on fully blocked rows."""
    return torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)


@pytest.mark.points(2)
def test_an_additive_float_mask_is_added_to_the_scores(submission):
    """A floating mask is added to the scores before the softmax (-inf blocks, finite values shift)."""
    scores = inputs.randn(2, 3, 5, 7, salt=110)
    allowed = inputs.random_bool_mask(2, 3, 5, 7, salt=111)
    mask = inputs.additive_mask(allowed, salt=112)
    got = submission.attention_weights(scores, mask)
    assert_close(got, reference.softmax_weights(scores, mask), "attention_weights(scores, float_mask)", DIMS,
                 hint="a float mask is ADDED: softmax(scores + mask, dim=-1)",
                 mistakes={
                     "the float mask was used as a bool mask (mask == 0 as allowed): a float mask is ADDED "
                     "to the scores, its finite values shift them": reference.softmax_weights(scores, mask == 0),
                     "only the -inf entries of the float mask were used: ADD the whole mask to the scores":
                         reference.softmax_weights(scores, ~torch.isneginf(mask)),
                     "the float mask was converted with .bool() (every nonzero = allowed): a float mask is "
                     "ADDED to the scores": reference.softmax_weights(scores, mask.bool()),
                     "the float mask was ignored: add it to the scores": torch.softmax(scores, dim=-1),
                 })


@pytest.mark.points(1)
def test_a_padding_mask_broadcasts_over_heads_and_queries(submission):
    """A [B, 1, 1, Tk] bool padding mask applies to every head and query of its batch item."""
    scores = inputs.randn(2, 3, 5, 7, salt=113)
    mask = inputs.padding_mask([7, 4], 7)
    got = submission.attention_weights(scores, mask)
    assert_close(got, reference.softmax_weights(scores, mask), "attention_weights(scores, padding_mask [2, 1, 1, 7])",
                 DIMS, hint="masked_fill and + broadcast a [B, 1, 1, Tk] mask over heads and queries by themselves",
                 mistakes={"the bool mask is inverted: True means ALLOWED":
                           reference.softmax_weights(scores, ~mask)})


@pytest.mark.points(1)
def test_a_fully_blocked_bool_row_gives_zeros_not_nan(submission):
    """A query row whose bool mask is all False gets all-zero weights, not NaN."""
    scores = inputs.randn(2, 3, 5, 7, salt=114)
    mask = inputs.random_bool_mask(2, 3, 5, 7, salt=115)
    mask[0, 1, 2] = False
    mask[1, :, 4] = False
    got = submission.attention_weights(scores, mask)
    assert_close(got, reference.softmax_weights(scores, mask),
                 "attention_weights(scores, mask) with fully blocked rows", DIMS, hint=NO_NAN,
                 mistakes={"blocked with a large finite number (finfo.min or -1e9): a fully blocked row then gets "
                           "uniform weights 1/Tk instead of zeros": uniform_row_mistake(scores, mask)})


@pytest.mark.points(1)
def test_a_fully_minus_inf_float_row_gives_zeros_not_nan(submission):
    """A query row whose float mask is -inf everywhere gets all-zero weights, not NaN."""
    scores = inputs.randn(2, 2, 4, 6, salt=116)
    allowed = inputs.random_bool_mask(2, 2, 4, 6, salt=117)
    allowed[1, 0, 3] = False
    allowed[0, 1, 0] = False
    mask = inputs.additive_mask(allowed, salt=118)
    got = submission.attention_weights(scores, mask)
    expected = reference.softmax_weights(scores, mask)
    assert_close(got, expected, "attention_weights(scores, float_mask) with rows of -inf", DIMS, hint=NO_NAN)
    assert_zero_where(got, ~allowed, "attention_weights(scores, float_mask)", DIMS, hint=NO_NAN)


@pytest.mark.points(1)
def test_weights_in_float64_are_exact_to_double_precision(submission):
    """float64 scores give float64 weights, accurate to double precision."""
    scores = inputs.randn(2, 3, 5, 7, dtype=torch.float64, salt=119)
    mask = inputs.random_bool_mask(2, 3, 5, 7, salt=120)
    got = submission.attention_weights(scores, mask)
    assert_close(got, reference.softmax_weights(scores, mask), "attention_weights(scores, mask) in float64", DIMS,
                 hint="keep the scores' dtype: no .float(), and softmax over dim=-1")


@pytest.mark.points(1)
def test_weights_leave_scores_and_mask_unchanged(submission):
    """attention_weights does not modify the scores or the mask in place (bool or float mask)."""
    scores = inputs.randn(2, 3, 5, 7, salt=121)
    allowed = inputs.random_bool_mask(2, 3, 5, 7, salt=122)
    submission.attention_weights(scores, allowed)
    assert_unchanged([scores, allowed], submission.last_args_after[:2], ["scores", "mask"], "attention_weights")
    additive = inputs.additive_mask(allowed, salt=123)
    submission.attention_weights(scores, additive)
    assert_unchanged([scores, additive], submission.last_args_after[:2], ["scores", "mask"], "attention_weights")


@pytest.mark.points(1)
def test_a_mask_that_does_not_broadcast_raises_value_error(submission):
    """A mask whose shape does not broadcast to the scores' [..., Tq, Tk] raises ValueError."""
    scores = inputs.randn(2, 3, 5, 7, salt=124)
    mask = torch.ones(5, 6, dtype=torch.bool)
    try:
        submission.attention_weights(scores, mask)
    except ValueError:
        return
    except NotImplementedError:
        raise
    except Exception as error:
        fail(f"attention_weights(scores [2, 3, 5, 7], mask [5, 6]) raised {type(error).__name__}: {error}; "
             "expected ValueError.\nHint: call the given _check_mask(mask, scores) when a mask is given.")
    fail("attention_weights(scores [2, 3, 5, 7], mask [5, 6]) did not raise: a [5, 6] mask does not fit "
         "7 keys.\nHint: call the given _check_mask(mask, scores) when a mask is given.")
