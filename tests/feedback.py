"""Assertions that explain themselves: which entry, expected vs got, and the likely mistake."""

import pytest
import torch

from tests.reference import TOLERANCES


def fail(message):
    pytest.fail(message, pytrace=False)


def where(index, dims=None):
    index = [int(i) for i in index]
    if dims and len(dims) == len(index):
        return "[" + ", ".join(f"{d}={i}" for d, i in zip(dims, index)) + "]"
    return "[" + ", ".join(str(i) for i in index) + "]"


def check_tensor(got, name, shape=None, dtype=None, layout=None, hint=None):
    """Fail unless got is a tensor with the given shape and dtype."""
    if not isinstance(got, torch.Tensor):
        fail(f"{name} should be a torch.Tensor, got {type(got).__name__}" + (f". {hint}" if hint else ""))
    if shape is not None and tuple(got.shape) != tuple(shape):
        text = f"{name} has shape {tuple(got.shape)}, expected {tuple(shape)}"
        text += f" = {layout}" if layout else ""
        fail(text + (f".\nHint: {hint}" if hint else "."))
    if dtype is not None and got.dtype != dtype:
        fail(f"{name} has dtype {got.dtype}, expected {dtype}: keep the inputs' dtype (no .float() or .double()).")


def _matches(got, candidate):
    if not isinstance(candidate, torch.Tensor) or candidate.shape != got.shape:
        return False
    tolerance = TOLERANCES.get(got.dtype, TOLERANCES[torch.float32])
    return bool(torch.allclose(got, candidate.to(got.dtype), equal_nan=True, **tolerance))


def _number(value):
    return f"{value.item() + 0.0:.6g}"  # + 0.0 prints -0.0 as 0


def assert_close(got, expected, name, dims=None, layout=None, hint=None, mistakes=None):
    """Fail with the worst entry unless got matches expected within the dtype's tolerance.

    mistakes: {explanation: what a known buggy implementation returns}; when got matches one of
    them, the message names that mistake instead of the generic hint.
    """
    check_tensor(got, name, shape=expected.shape, dtype=expected.dtype, layout=layout)
    tolerance = TOLERANCES[expected.dtype]
    got64, expected64 = got.double(), expected.double()
    nan = torch.isnan(got64) & ~torch.isnan(expected64)
    if nan.any():
        index = nan.nonzero()[0]
        text = (
            f"{name} is NaN at {where(index, dims)} ({int(nan.sum())} NaN entries); expected "
            f"{_number(expected64[tuple(index)])}."
        )
        fail(text + "\nHint: a row whose keys are all blocked must give zeros, not softmax(-inf, ..., -inf) = NaN.")
    error = (got64 - expected64).abs().nan_to_num(float("inf"))
    allowed = tolerance["atol"] + tolerance["rtol"] * expected64.abs()
    bad = error > allowed
    if not bad.any():
        return
    excess = torch.where(bad, error - allowed, torch.zeros_like(error)).flatten()
    index = torch.unravel_index(excess.argmax(), got.shape) if got.dim() else ()
    index = [int(i) for i in index]
    text = (
        f"{name} is wrong at {where(index, dims)}: expected {_number(expected64[tuple(index)])}, "
        f"got {_number(got64[tuple(index)])} ({int(bad.sum())} of {bad.numel()} entries are off; "
        f"largest error {error.max().item():.3g}, tolerance atol={tolerance['atol']:g} rtol={tolerance['rtol']:g})."
    )
    for explanation, candidate in (mistakes or {}).items():
        if _matches(got, candidate):
            fail(text + f"\nLikely cause: {explanation}")
    fail(text + (f"\nHint: {hint}" if hint else ""))


def assert_zero_where(got, blocked, name, dims=None, hint=None):
    """Fail unless got is exactly 0.0 wherever blocked (broadcastable) is True."""
    blocked = blocked.expand_as(got)
    leaks = (got != 0) & blocked
    if leaks.any():
        index = leaks.nonzero()[0]
        fail(
            f"{name} must be exactly 0.0 at blocked positions; got {got[tuple(index)].item():.4g} at "
            f"{where(index, dims)} ({int(leaks.sum())} of {int(blocked.sum())} blocked entries are not 0)."
            + (f"\nHint: {hint}" if hint else "")
        )


def assert_unchanged(before, after, names, function):
    """Fail if the student's function changed any of its input tensors in place."""
    for original, returned, name in zip(before, after, names):
        if returned is None or original is None:
            continue
        if not torch.equal(original, returned):
            fail(
                f"{function} changed its input `{name}` in place. Use out-of-place operations "
                f"(masked_fill, not masked_fill_; x = x + m, not x += m) on tensors you were given."
            )


def call(function, label, *args, hint=None, **kwargs):
    """function(*args, **kwargs) on the submission; an error its code raises fails the test with the
    call's label and a hint (NotImplementedError, crashes and timeouts pass through unchanged)."""
    from grader.proxy import RaisedInSubmission

    try:
        return function(*args, **kwargs)
    except RaisedInSubmission as error:
        if error.not_implemented:
            raise
        remote = error.remote or {}
        location = f"\n  at attention.py line {remote['line']}: {remote['code'].strip()}" if remote.get("line") else ""
        fail(f"{label} raised {remote.get('type', type(error).__name__)}: {remote.get('message', error)}{location}"
             + (f"\nHint: {hint}" if hint else ""))
