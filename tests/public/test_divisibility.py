"""Task `divisibility`: DimensionMismatchError when d_model is not a multiple of n_heads, raised by both
MultiHeadAttention(d_model, n_heads) and split_heads(x, n_heads), and only then."""

import re

import pytest
import torch

from tests.support import inputs, oracle
from tests.support.feedback import fail

pytestmark = pytest.mark.task("divisibility")


def raised_dimension_mismatch(submission, make, text, d_model, n_heads, missing_check):
    """The DimensionMismatchError that make() raises; fails, naming the likely mistake, otherwise.
    missing_check: what to fix when make() raises nothing or torch's own error."""
    try:
        make()
    except submission.DimensionMismatchError as error:
        return error
    except NotImplementedError:
        raise
    except Exception as error:
        kind = type(error).__name__
        text = f"{text} raised {kind}: {error}; expected DimensionMismatchError"
        if kind == "ValueError":
            fail(f"{text}.\nLikely cause: a plain ValueError was raised: raise DimensionMismatchError, the "
                 "ValueError subclass defined at the top of attention.py.")
        if kind == "RuntimeError":
            fail(f"{text}: that is torch failing to reshape.\nLikely cause: {missing_check}")
        fail(f"{text} (defined at the top of attention.py).\nHint: raise that class, not {kind} or assert.")
    text = f"{text} did not raise: {d_model} features cannot be split into {n_heads} equal heads."
    if split_heads_works(submission):  # not a stub that does nothing: the check itself is missing
        fail(f"{text}\nLikely cause: {missing_check}")
    fail(f"{text}\nHint: check d_model % n_heads and raise DimensionMismatchError when it is not 0.")


def split_heads_works(submission):
    """True when split_heads(x [2, 3, 16], 4) returns the right heads."""
    x = inputs.randn(2, 3, 16, salt=37)
    try:
        got = submission.split_heads(x, 4)
    except Exception:
        return False
    expected = oracle.split_heads(x, 4)
    return isinstance(got, torch.Tensor) and got.shape == expected.shape and bool(torch.equal(got, expected))


def constructs(submission, make, text, d_model, n_heads):
    """make() must not raise: n_heads divides d_model."""
    try:
        make()
    except NotImplementedError:
        raise
    except Exception as error:
        fail(f"{text} raised {type(error).__name__}: {error}, but {n_heads} heads of {d_model // n_heads} "
             f"features each split {d_model} evenly.\nHint: raise only when d_model % n_heads != 0.")


def assert_message_names(error, text, d_model, n_heads):
    """The error message contains both numbers, in any wording."""
    message = str(error)
    numbers = re.findall(r"\d+", message)
    missing = [f"{name}={value}" for name, value in (("d_model", d_model), ("n_heads", n_heads))
               if str(value) not in numbers]
    if missing:
        fail(f"{text} raised DimensionMismatchError({message!r}), which does not name {' and '.join(missing)}.\n"
             "Hint: say what does not divide, e.g. f\"d_model={d_model} is not divisible by n_heads={n_heads}\".")


MHA_CHECK = ("MultiHeadAttention.__init__ does not check d_model % n_heads: raise DimensionMismatchError there, "
             "before creating the layers.")
SPLIT_CHECK = ("split_heads does not check d_model % n_heads itself (the check in MultiHeadAttention does not "
               "protect direct calls): raise DimensionMismatchError in split_heads too.")


@pytest.mark.points(1)
def test_mha_with_16_features_and_5_heads_raises_dimension_mismatch(submission):
    """MultiHeadAttention(16, 5) raises the lab's DimensionMismatchError; MultiHeadAttention(16, 4) does not."""
    raised_dimension_mismatch(submission, lambda: submission.MultiHeadAttention(16, 5), "MultiHeadAttention(16, 5)",
                              16, 5, MHA_CHECK)
    constructs(submission, lambda: submission.MultiHeadAttention(16, 4), "MultiHeadAttention(16, 4)", 16, 4)


@pytest.mark.points(1)
def test_split_heads_with_16_features_and_5_heads_raises_dimension_mismatch(submission):
    """split_heads(x [B, T, 16], 5) raises the lab's DimensionMismatchError; split_heads(x, 4) does not."""
    x = inputs.randn(2, 3, 16, salt=35)
    raised_dimension_mismatch(submission, lambda: submission.split_heads(x, 5), "split_heads(x [2, 3, 16], 5)",
                              16, 5, SPLIT_CHECK)
    constructs(submission, lambda: submission.split_heads(x, 4), "split_heads(x [2, 3, 16], 4)", 16, 4)


@pytest.mark.points(1)
def test_dimension_mismatch_message_names_d_model_and_n_heads(submission):
    """Both DimensionMismatchError messages name d_model (16) and n_heads (5), in any wording."""
    x = inputs.randn(2, 3, 16, salt=36)
    for make, text, missing_check in ((lambda: submission.MultiHeadAttention(16, 5), "MultiHeadAttention(16, 5)",
                                       MHA_CHECK),
                                      (lambda: submission.split_heads(x, 5), "split_heads(x [2, 3, 16], 5)",
                                       SPLIT_CHECK)):
        error = raised_dimension_mismatch(submission, make, text, 16, 5, missing_check)
        assert_message_names(error, text, 16, 5)
