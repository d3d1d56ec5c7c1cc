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
        building = building_failed(error)
        if building:
            fail(f"{text}: building the DimensionMismatchError failed: {kind}: {error}{building}\n"
                 "The check fired (n_heads does not divide d_model), but making its message raised another error. "
                 + BUILD_ADVICE.get(kind, "Build the message from the arguments themselves (d_model, n_heads)")
                 + ", e.g. f\"d_model={d_model} is not divisible by n_heads={n_heads}\".")
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


BUILD_ADVICE = {
    "AttributeError": "Build the message from the arguments themselves (d_model, n_heads), not from attributes "
                      "set later (self.d_model before it is assigned)",
    "TypeError": "Build the message from the arguments themselves: a % format needs exactly one value per "
                 "placeholder; an f-string avoids that",
}
BUILDING_ERRORS = ("AttributeError", "TypeError", "NameError", "KeyError", "IndexError", "ValueError")


def building_failed(error):
    """Where the student's code failed while constructing its DimensionMismatchError ("" when the evidence does not
    show that): the failing frame lies inside a `raise DimensionMismatchError(...)` statement of attention.py."""
    from tests.support.feedback import frames_in_submission, student_frame

    remote = getattr(error, "remote", None) or {}
    if type(error).__name__ not in BUILDING_ERRORS or not remote.get("line"):
        return ""
    frames = frames_in_submission(remote)
    if not frames:
        return ""
    trace = str(remote.get("traceback") or "")
    last = trace.rstrip().splitlines()[-1] if trace.strip() else ""
    statement = _statement_around(remote, frames[-1][0])
    if "DimensionMismatchError" not in statement or "DimensionMismatchError" in last.split(":")[0]:
        return ""
    return student_frame(remote)


def _statement_around(remote, line):
    """The text of the statement that holds `line` in the student's file (read where the traceback says it is),
    or the reported code line when the file cannot be read here."""
    from tests.support.depends import submission_file

    path = submission_file()  # the worker runs a copy of it: its traceback's path is not this process's
    try:
        lines = open(path, encoding="utf-8").read().splitlines() if path else []
    except OSError:
        lines = []
    if not lines or line > len(lines):
        return str(remote.get("code") or "")
    start = line - 1
    while start > 0 and start > line - 8 and "raise" not in lines[start]:
        start -= 1
    return "\n".join(lines[start:line])


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
