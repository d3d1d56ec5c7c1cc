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


def dimension_read(message, shape, d_model, n_heads):
    """The one dimension of x, not the last, whose size the error message names instead of d_model (None when
    the message does not single one out): the evidence that the check read the wrong dimension."""
    if shape is None or str(d_model) in re.findall(r"\d+", message):
        return None
    named = set(re.findall(r"\d+", message))
    read = [dim for dim, size in enumerate(shape[:-1]) if str(size) in named and size != n_heads]
    sizes = {shape[dim] for dim in read}
    return read[0] if len(sizes) == 1 and len(read) == 1 else None


def split_heads_works(submission):
    """True when split_heads(x [2, 3, 16], 4) returns the right heads."""
    x = inputs.randn(2, 3, 16, salt=37)
    try:
        got = submission.split_heads(x, 4)
    except Exception:
        return False
    expected = oracle.split_heads(x, 4)
    return isinstance(got, torch.Tensor) and got.shape == expected.shape and bool(torch.equal(got, expected))


def constructs(make, text, d_model, n_heads, shape=None):
    """make() must not raise: n_heads divides d_model. shape: the input's, when make splits a tensor."""
    error = raised(make)
    if error is None:
        return
    kind = type(error).__name__
    valid = f"{n_heads} heads of {d_model // n_heads} features each split {d_model} evenly"
    if kind == "DimensionMismatchError":
        read = dimension_read(str(error), shape, d_model, n_heads)
        cause = (f"\nLikely cause: the check read dimension {read} of x ({shape[read]}), not its last one ({d_model}): "
                 "d_model is x.shape[-1]") if read is not None else ""
        fail(f"{text} raised DimensionMismatchError: {error}, but {valid}.{cause}\n"
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
