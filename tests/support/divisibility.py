"""Checks of the divisibility task: DimensionMismatchError raised when n_heads does not divide d_model, with
both numbers in its message, and nothing raised when it does."""

import re

import torch

from tests.support import inputs, oracle
from tests.support.feedback import fail, raised

MHA_CHECK = ("MultiHeadAttention.__init__ does not check d_model % n_heads: raise DimensionMismatchError there, "
             "before creating the layers.")
SPLIT_CHECK = ("split_heads does not check d_model % n_heads itself (the check in MultiHeadAttention does not "
               "protect direct calls): raise DimensionMismatchError in split_heads too.")


def raised_dimension_mismatch(submission, make, text, d_model, n_heads, missing_check):
    """The DimensionMismatchError that make() raises; fails, naming the likely mistake, otherwise.
    missing_check: what to fix when make() raises nothing or torch's own error."""
    error = raised(make, submission.DimensionMismatchError)
    if isinstance(error, submission.DimensionMismatchError):
        return error
    if error is not None:
        kind = type(error).__name__
        text = f"{text} raised {kind}: {error}; expected DimensionMismatchError"
        if kind == "ValueError":
            fail(f"{text}.\nLikely cause: a plain ValueError was raised: raise DimensionMismatchError, the "
                 "ValueError subclass defined at the top of attention.py.")
        if kind == "RuntimeError":
            fail(f"{text}: that is torch failing to reshape.\nLikely cause: {missing_check}")
        if kind == "AssertionError":
            fail(f"{text}.\nLikely cause: the check is an assert statement: Python skips asserts under -O, and it "
                 "raises AssertionError; raise DimensionMismatchError(...) instead.")
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


def constructs(make, text, d_model, n_heads):
    """make() must not raise: n_heads divides d_model."""
    error = raised(make)
    if error is None:
        return
    kind = type(error).__name__
    valid = f"{n_heads} heads of {d_model // n_heads} features each split {d_model} evenly"
    if kind == "DimensionMismatchError":
        fail(f"{text} raised DimensionMismatchError: {error}, but {valid}.\n"
             "Hint: raise only when d_model % n_heads != 0.")
    fail(f"{text} raised {kind} on valid input: {error} ({valid}, so nothing should raise).")


def assert_message_names(error, text, d_model, n_heads):
    """The error message contains both numbers, in any wording."""
    message = str(error)
    numbers = re.findall(r"\d+", message)
    missing = [f"{name}={value}" for name, value in (("d_model", d_model), ("n_heads", n_heads))
               if str(value) not in numbers]
    if missing:
        fail(f"{text} raised DimensionMismatchError({message!r}), which does not name {' and '.join(missing)}.\n"
             "Hint: say what does not divide, e.g. f\"d_model={d_model} is not divisible by n_heads={n_heads}\".")
