"""Assertions that explain themselves: which entry, expected vs got, and the likely mistake."""

import pytest
import torch

from tests.support.oracle import TOLERANCES


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
    """True when got equals a mistake's result: a tensor (at got's tolerance) or (tensor, dtype whose
    tolerance to use)."""
    tolerance_dtype = got.dtype
    if isinstance(candidate, tuple):
        candidate, tolerance_dtype = candidate
    if not isinstance(candidate, torch.Tensor) or candidate.shape != got.shape:
        return False
    tolerance = TOLERANCES.get(tolerance_dtype, TOLERANCES[torch.float32])
    return bool(torch.allclose(got, candidate.to(got.dtype), equal_nan=True, **tolerance))


def _constant(got):
    """True for a result with one value everywhere (zeros, ones): what a do-nothing submission returns,
    which no diagnosis may explain."""
    return got.numel() > 0 and bool((got == got.flatten()[0]).all())


def close(got, expected) -> bool:
    """True when got is a tensor of expected's shape whose values match expected's within tolerance."""
    return _matches(got, expected)


def _number(value):
    return f"{value.item() + 0.0:.6g}"  # + 0.0 prints -0.0 as 0


def assert_close(got, expected, name, dims=None, layout=None, hint=None, mistakes=None):
    """Fail with the worst entry unless got matches expected within the dtype's tolerance.

    mistakes: {explanation: what a known buggy implementation returns}; when got matches one of
    them, the message names that mistake, before any generic diagnosis (NaN, hint).
    """
    check_tensor(got, name, shape=expected.shape, dtype=expected.dtype, layout=layout)
    tolerance = TOLERANCES[expected.dtype]
    got64, expected64 = got.double(), expected.double()
    error = (got64 - expected64).abs().nan_to_num(float("inf"))
    allowed = tolerance["atol"] + tolerance["rtol"] * expected64.abs()
    bad = error > allowed
    if not bad.any():
        return
    excess = torch.where(bad, error - allowed, torch.zeros_like(error)).nan_to_num(float("inf")).flatten()
    index = torch.unravel_index(excess.argmax(), got.shape) if got.dim() else ()
    index = [int(i) for i in index]
    text = (
        f"{name} is wrong at {where(index, dims)}: expected {_number(expected64[tuple(index)])}, "
        f"got {_number(got64[tuple(index)])} ({int(bad.sum())} of {bad.numel()} entries are off; "
        f"largest error {error.max().item():.3g}, tolerance atol={tolerance['atol']:g} rtol={tolerance['rtol']:g})."
    )
    for explanation, candidate in (mistakes or {}).items() if not _constant(got) else ():
        if _matches(got, candidate):
            fail(text + f"\nLikely cause: {explanation}")
    nan = torch.isnan(got64) & ~torch.isnan(expected64)
    if nan.any():
        first = nan.nonzero()[0]
        fail(
            f"{name} is NaN at {where(first, dims)} ({int(nan.sum())} NaN entries); expected "
            f"{_number(expected64[tuple(first)])}.\nHint: a row whose keys are all blocked must give zeros, "
            "not softmax(-inf, ..., -inf) = NaN."
        )
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
                f"{function} changed its input `{name}` in place.\nLikely cause: an in-place operation on "
                "a tensor you were given (masked_fill_, +=, a slice assignment): use out-of-place operations "
                "(masked_fill, not masked_fill_; x = x + m, not x += m)."
            )


# Errors whose text alone shows the mistake: (words in torch's message, the likely cause).
KNOWN_ERRORS = (
    (("einsum()", "no ellipsis"),
     "an einsum equation with fixed dims such as 'bhid,bhjd->bhij' fits 4-D inputs only: write "
     "'...id,...jd->...ij' (an ellipsis for the leading dims), or use q @ k.transpose(-2, -1)"),
    (("view size is not compatible",),
     ".view() on a transposed (non-contiguous) tensor: use reshape() or flatten(-2), or call .contiguous() "
     "before view()."),
    (("bitwise_and", "not implemented for"),
     "`&` was applied to a floating tensor: `&` combines bool masks only. A float mask is ADDED to the "
     "scores; block the causal future with masked_fill(~causal, float('-inf')) as well"),
)


def known_error(message: str) -> str | None:
    """The likely cause of an error torch raised inside the submission, when its text shows it."""
    for words, cause in KNOWN_ERRORS:
        if all(word in message for word in words):
            return cause
    return None


def fail_raised(error, label, hint=None):
    """Fail for an error the submission raised: its type, message and line, and the likely cause when
    torch's message shows it (otherwise the hint). The stubs' NotImplementedError passes through."""
    remote = error.remote or {}
    message = str(remote.get("message", error))
    if error.not_implemented and "not implemented yet" in message:
        raise error
    location = f"\n  at attention.py line {remote['line']}: {remote['code'].strip()}" if remote.get("line") else ""
    cause = known_error(message)
    advice = f"\nLikely cause: {cause}" if cause else (f"\nHint: {hint}" if hint else "")
    fail(f"{label} raised {remote.get('type', type(error).__name__)}: {message}{location}{advice}")


def call(function, label, *args, hint=None, **kwargs):
    """function(*args, **kwargs) on the submission; an error its code raises fails the test (fail_raised).
    Crashes and timeouts pass through unchanged."""
    from grader.sandbox.errors import RaisedInSubmission

    try:
        return function(*args, **kwargs)
    except RaisedInSubmission as error:
        fail_raised(error, label, hint)


def call_measured(submission, function, label, *args, hint=None, **kwargs):
    """call(), measured: (the result, the call's Measurement: operation counts, memory peak, arguments after
    the call)."""
    return call(submission.measure, label, function, *args, hint=hint, **kwargs)


def raised(make, expected=()):
    """The exception make() raises, or None. The stubs' NotImplementedError passes through, unless it is
    also one of the expected exceptions."""
    try:
        make()
    except expected as error:
        return error
    except NotImplementedError:
        raise
    except Exception as error:
        return error
    return None


def expect_raises(make, expected, text, reason, hint, wrong_hint=None):
    """The `expected` exception that make() raises. Another exception fails the test naming it (and
    wrong_hint, else hint); none fails it with reason, why make() should raise, and hint."""
    error = raised(make, expected)
    if isinstance(error, expected):
        return error
    if error is not None:
        fail(f"{text} raised {type(error).__name__}: {error}; expected {expected.__name__}.\n"
             f"Hint: {wrong_hint or hint}")
    fail(f"{text} did not raise: {reason}.\nHint: {hint}")


NO_GRAPH = "does not require grad"


def gradients(function, label, args, wrt, cotangents, names, **kwargs):
    """function.grad(...) on the submission: the gradients of sum(result_i * cotangents[i]) with respect
    to args[i] for i in wrt (names: what each of them is called). Call it only after the forward values were checked: a result cut off from
    autograd is then the submission's doing (NumPy, .detach(), .item(), torch.tensor of numbers)."""
    from grader.sandbox.errors import RaisedInSubmission

    try:
        grads = function.grad(args=args, wrt=wrt, cotangents=cotangents, **kwargs)
    except RaisedInSubmission as error:
        if NO_GRAPH not in str((error.remote or {}).get("message", error)):
            fail_raised(error, f"the backward pass of {label}")
        fail(f"the backward pass of {label} failed: no gradient reaches the inputs.\nLikely cause: the result "
             "is cut off from autograd (computed with NumPy, or through .detach(), .data, .item() or "
             "torch.tensor(...) of values): the forward values are right, but use torch operations throughout")
    if not isinstance(grads, (list, tuple)) or len(grads) != len(wrt):
        fail(f"the backward pass of {label} returned {grads!r}, expected {len(wrt)} gradients")
    for name, grad in zip(names, grads):
        if grad is None:
            fail(f"the gradient of {label} with respect to {name} is None: {name} does not reach the result "
                 "through autograd.\n"
                 "Hint: compute with torch operations on the tensors you were given (no .detach(), .data, "
                 "or new tensors built from their numbers).")
    return grads


# -- scaled_dot_product_attention: calls that return (output, weights) ------------------------------

SDPA_DIMS = ("b", "h", "i", "j")
SDPA_OUT_DIMS = ("b", "h", "i", "c")
SQUARE_MASK = ("the causal mask has the shape [T, T] of one length (causal_mask(Tq), or ones(Tq, Tq)) while the "
               "scores are [Tq, Tk]: build a [Tq, Tk] mask, torch.ones(Tq, Tk, dtype=torch.bool).tril()")


def unpack_pair(result, label):
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"{label} should return a pair (output, weights), got {type(result).__name__}")
    return result


def run_sdpa(submission, label, *args, hint=None, **kwargs):
    """scaled_dot_product_attention(*args, **kwargs) on the submission, as (output, weights)."""
    return unpack_pair(call(submission.scaled_dot_product_attention, label, *args, hint=hint, **kwargs), label)


def run_causal(submission, label, q, k, v, plain_expected, hint=None, **kwargs):
    """run_sdpa(..., is_causal=True); a size error that the same call without is_causal (expected result:
    plain_expected) does not raise, and gets right, is a causal mask of the wrong shape."""
    from grader.sandbox.errors import RaisedInSubmission

    try:
        result = submission.scaled_dot_product_attention(q, k, v, is_causal=True, **kwargs)
    except RaisedInSubmission as error:
        message = str((error.remote or {}).get("message", error))
        if "must match the size of tensor" in message and not kwargs and q.size(-2) != k.size(-2):
            plain = call(submission.scaled_dot_product_attention, label.replace(", is_causal=True", ""), q, k, v)
            if isinstance(plain, (tuple, list)) and len(plain) == 2 and all(map(close, plain, plain_expected)):
                fail(f"{label} raised {(error.remote or {}).get('type')}: {message}\nLikely cause: {SQUARE_MASK}")
        fail_raised(error, label, hint)
    return unpack_pair(result, label)


def compare_pair(got, expected, label, mistakes=None, hint=None, dims=SDPA_DIMS, out_dims=SDPA_OUT_DIMS):
    """Weights first (the likely culprit), then the output; mistakes maps explanations to (output, weights)."""
    output, weights = got
    expected_output, expected_weights = expected
    mistakes = mistakes or {}
    assert_close(weights, expected_weights, f"{label} weights", dims, layout="[..., Tq, Tk]", hint=hint,
                 mistakes={text: pair[1] for text, pair in mistakes.items() if pair[1] is not None})
    assert_close(output, expected_output, f"{label} output", out_dims, layout="[..., Tq, dv]",
                 hint="output = weights @ v",
                 mistakes={text: pair[0] for text, pair in mistakes.items() if pair[0] is not None})
