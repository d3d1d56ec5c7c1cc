"""Assertions that explain themselves: which entry, expected vs got, and the likely mistake."""

import re

import pytest
import torch

from tests.support.oracle import TOLERANCES


def fail(message):
    from tests.support import depends  # late: depends builds on this module

    pytest.fail(depends.first_fix(message), pytrace=False)


def where(index, dims=None):
    index = [int(i) for i in index]
    if dims and len(dims) == len(index):
        return "[" + ", ".join(f"{d}={i}" for d, i in zip(dims, index)) + "]"
    return "[" + ", ".join(str(i) for i in index) + "]"


def _tensor_problem(got, name, shape=None, dtype=None, layout=None, hint=None):
    """Why got is not a tensor of the given shape and dtype (None when it is)."""
    if not isinstance(got, torch.Tensor):
        return f"{name} should be a torch.Tensor, got {type(got).__name__}" + (f". {hint}" if hint else "")
    if shape is not None and tuple(got.shape) != tuple(shape):
        text = f"{name} has shape {tuple(got.shape)}, expected {tuple(shape)}"
        text += f" = {layout}" if layout else ""
        swapped = permuted_dims(tuple(got.shape), tuple(shape), layout)
        text += f".\nLikely cause: {swapped}" if swapped else ""
        return text + (f".\nHint: {hint}" if hint else ".")
    if dtype is not None and got.dtype != dtype:
        return f"{name} has dtype {got.dtype}, expected {dtype}: keep the inputs' dtype (no .float() or .double())."
    return None


def permuted_dims(got, expected, layout=None):
    """What a result with the expected sizes in another order holds, when its sizes tell the dims apart (None
    otherwise): e.g. "your result is [B, H, Tk, Tq]: Tq and Tk are swapped (a transpose of the wrong dims)"."""
    if len(got) != len(expected) or sorted(got) != sorted(expected) or len(set(expected)) != len(expected):
        return None
    names = [part.strip() for part in layout.strip()[1:-1].split(",")] if layout and layout.strip().startswith("[") \
        else []
    if len(names) != len(expected):
        names = [f"dim {index}" for index in range(len(expected))]
    holds = [names[expected.index(size)] for size in got]
    moved = [name for name, held in zip(names, holds) if name != held]
    which = f"{moved[0]} and {moved[1]} are swapped" if len(moved) == 2 else f"{', '.join(moved)} are out of order"
    return f"your result is [{', '.join(holds)}]: {which} (a transpose or permute of the wrong dims)"


def check_tensor(got, name, shape=None, dtype=None, layout=None, hint=None):
    """Fail unless got is a tensor with the given shape and dtype."""
    problem = _tensor_problem(got, name, shape, dtype, layout, hint)
    if problem:
        fail(problem)


# -- naming a mistake: the student's result against what each known mistake computes ----------------

MATCH = 1.0  # a variant matches when no entry is further from it than the tolerance allows
FAR_CLOSER = 1000.0  # ... or when its largest absolute error is this many times smaller than the truth's
CLEARLY = 10.0  # every other variant, and the truth, must be at least this many tolerances away
MARGIN = 100.0  # ... and, for a match that is only far closer, this many times its absolute error


def _parts(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _candidate(candidate):
    """(value, tolerance dtype or None) from a mistakes entry: a value, (tensor, dtype) or a Result."""
    if hasattr(candidate, "tolerance") and hasattr(candidate, "value"):
        return candidate.value, candidate.tolerance
    if isinstance(candidate, tuple) and len(candidate) == 2 and isinstance(candidate[1], torch.dtype):
        return candidate
    return candidate, None


def _part_distance(got, known, tolerance_dtype):
    """(largest error in tolerances, largest absolute error) of one tensor; None when not comparable."""
    if not isinstance(got, torch.Tensor) or not isinstance(known, torch.Tensor):
        return None
    if got.shape != known.shape or got.dtype != known.dtype:
        return None
    if got.numel() == 0:
        return 0.0, 0.0
    tolerance = TOLERANCES.get(tolerance_dtype or known.dtype, TOLERANCES[torch.float32])
    got64, known64 = got.double(), known.double()
    same = (got64 == known64) | (torch.isnan(got64) & torch.isnan(known64))
    error = torch.where(same, 0.0, (got64 - known64).abs().nan_to_num(float("inf"), float("inf")))
    allowed = tolerance["atol"] + tolerance["rtol"] * known64.abs().nan_to_num(0.0, 0.0, 0.0)
    return float((error / allowed).max()), float(error.max())


def distance(got, candidate):
    """(error in tolerances, absolute error), the worst over the parts the candidate predicts; None when
    got and the candidate cannot be compared (structure, shape or dtype differ)."""
    value, tolerance_dtype = _candidate(candidate)
    got_parts, known_parts = _parts(got), _parts(value)
    if len(got_parts) != len(known_parts):
        return None
    found = [_part_distance(g, k, tolerance_dtype) for g, k in zip(got_parts, known_parts) if k is not None]
    if not found or any(d is None for d in found):
        return None
    return max(d[0] for d in found), max(d[1] for d in found)


def _constant(got):
    """True when a part of the result holds one value everywhere (zeros, ones, uniform weights): what a
    do-nothing submission returns, which no diagnosis may explain."""
    return any(isinstance(part, torch.Tensor) and part.numel() > 1 and bool((part == part.flatten()[0]).all())
               for part in _parts(got))


def diagnose(got, expected, mistakes):
    """The one mistake that explains got, with the numbers, or None. It must match (to the tolerance, or
    FAR_CLOSER times closer than the correct result) and every other mistake and the correct result must
    be CLEARLY and MARGIN times further away: two mistakes that fit equally well name neither. When the
    mistakes carry a second, independent input (hypotheses.Mistakes.second), the same mistake must also
    explain the submission's result there: one input can fit a cause by coincidence (isqrt(8) = sqrt(4))."""
    found = _explain(got, expected, mistakes)
    if found is None:
        return None
    cause, best_abs, truth_abs = found
    second = getattr(mistakes, "second", None)
    if second is not None and not _confirmed(cause, second):
        return None
    return (f"{cause} (your result differs from what that mistake computes by at most {best_abs:.2g}, and from "
            f"the correct result by up to {truth_abs:.3g})")


def _confirmed(cause, second):
    """True when second() -> (got, expected, mistakes), a second input's call, is explained by the same cause."""
    try:
        got, expected, mistakes = second()
    except pytest.fail.Exception:
        return False  # the second call failed in a way of its own (raised, wrong shape): no confirmation
    found = _explain(got, expected, mistakes)
    return found is not None and found[0] == cause


def _explain(got, expected, mistakes):
    """(cause, its largest absolute error, the correct result's) of the one mistake that explains got, or None."""
    if not mistakes or _constant(got):
        return None
    scored = sorted((d, cause) for cause, candidate in mistakes.items() if (d := distance(got, candidate)))
    if not scored:
        return None
    (best, best_abs), cause = scored[0]
    truth, truth_abs = distance(got, expected) or (float("inf"), float("inf"))
    matches = best <= MATCH
    far_closer = truth_abs < float("inf") and best_abs * FAR_CLOSER <= truth_abs  # inf (NaN) proves nothing
    if best_abs == float("inf") or not (matches or far_closer):
        return None
    others = [d for d, _ in scored[1:]] + [(truth, truth_abs)]
    if any(norm < CLEARLY or (not matches and absolute < MARGIN * best_abs) for norm, absolute in others):
        return None
    return cause, best_abs, truth_abs


def close(got, expected) -> bool:
    """True when got is a tensor of expected's shape whose values match expected's within tolerance."""
    found = distance(got, expected)
    return found is not None and found[0] <= MATCH


def _number(value):
    return f"{value.item() + 0.0:.6g}"  # + 0.0 prints -0.0 as 0


NAN_CAUSES = "NaN comes from 0/0, inf - inf or 0 * inf"


def nan_hint(nan, blocked):
    """What the NaN entries show: rows that are fully blocked (blocked: bool, broadcastable, True on such rows)
    want zeros; NaN where the row has allowed keys has another cause."""
    if blocked is None:
        return f"{NAN_CAUSES}: check each step before and in the softmax."
    in_blocked = nan & blocked.expand_as(nan)
    if bool((in_blocked == nan).all()):  # every NaN lies in a fully blocked row
        return "a row whose keys are all blocked must give zeros, not softmax(-inf, ..., -inf) = NaN."
    return (f"this row has allowed keys, so the NaN does not come from a fully blocked row: {NAN_CAUSES}, e.g. a "
            "mask multiplied into the scores (0 * -inf) or exp() of a large score in a softmax written by hand "
            "(subtract the row max first).")


def assert_close(got, expected, name, dims=None, layout=None, hint=None, mistakes=None, cause=None, blocked=None,
                 nan_advice=None):
    """Fail with the worst entry unless got matches expected within the dtype's tolerance.

    mistakes: {explanation: what a known mistake returns}; the failure names the one that explains got
    (diagnose), before any generic diagnosis. cause: such a line found already (compare_pair). blocked:
    bool, True on the rows whose keys are all blocked, so that a NaN can be explained by the evidence.
    """
    problem = _tensor_problem(got, name, shape=expected.shape, dtype=expected.dtype, layout=layout)
    if problem:
        cause = cause or diagnose(got, expected, mistakes)
        fail(problem + (f"\nLikely cause: {cause}" if cause else ""))
    tolerance = TOLERANCES[expected.dtype]
    got64, expected64 = got.double(), expected.double()
    error = (got64 - expected64).abs().nan_to_num(float("inf"))
    allowed = tolerance["atol"] + tolerance["rtol"] * expected64.abs()
    bad = error > allowed
    if not bad.any():
        return
    cause = cause or diagnose(got, expected, mistakes)  # only a failing check reads the mistakes
    likely = f"\nLikely cause: {cause}" if cause else ""
    excess = torch.where(bad, error - allowed, torch.zeros_like(error)).nan_to_num(float("inf")).flatten()
    index = torch.unravel_index(excess.argmax(), got.shape) if got.dim() else ()
    index = [int(i) for i in index]
    text = (
        f"{name} is wrong at {where(index, dims)}: expected {_number(expected64[tuple(index)])}, "
        f"got {_number(got64[tuple(index)])} ({int(bad.sum())} of {bad.numel()} entries are off; "
        f"largest error {error.max().item():.3g}, tolerance atol={tolerance['atol']:g} rtol={tolerance['rtol']:g})."
    )
    if cause:
        fail(text + likely)
    nan = torch.isnan(got64) & ~torch.isnan(expected64)
    if nan.any():
        first = nan.nonzero()[0]
        fail(f"{name} is NaN at {where(first, dims)} ({int(nan.sum())} NaN entries); expected "
             f"{_number(expected64[tuple(first)])}.\nHint: {nan_advice or nan_hint(nan, blocked)}")
    if blocked is not None and not bool(blocked.expand_as(got)[tuple(index)]):
        hint = open_row_hint(got64, expected64, index)  # the worst entry's row has allowed keys: not a blocked-row fix
    fail(text + (f"\nHint: {hint}" if hint else ""))


def open_row_hint(got64, expected64, index):
    """What the worst wrong entry's row shows when that row has allowed keys, so the hint about fully blocked
    rows does not apply. Where the expected rows are distributions over the last dim (weights: each row sums to
    1, or is all zeros), the row's sum is the evidence."""
    where_row = "this row has allowed keys, so the fully blocked rows are not the (only) problem"
    row_sums = expected64.sum(-1) if expected64.dim() >= 2 else None
    weights = row_sums is not None and bool((((row_sums - 1).abs() <= 1e-6) | (row_sums == 0)).all())
    if not weights:
        return f"{where_row}: compute the rows with allowed keys exactly as you would with no blocked row."
    row = tuple(index[:-1])
    row_sum = got64[row].sum().item()
    if abs(row_sum - 1.0) <= 1e-3:
        return f"{where_row}: its weights sum to 1 but sit on the wrong keys; check the mask and the scores."
    column_sums = got64[tuple(index[:-2])].sum(-2)
    down_columns = bool(((column_sums - 1.0).abs() <= 1e-3).all())
    return (f"{where_row}, and its weights sum to {row_sum:.4g} over the keys instead of 1"
            + ("; they sum to 1 down each column instead: the softmax must run over the keys, dim=-1 (the last),"
               " in every branch of your code." if down_columns else
               ": normalise over the keys (dim=-1) after blocking, in every branch of your code."))


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


DTYPE_MIX = ("two tensors of different dtypes met in one operation: one was converted on the way (.float(), "
             "dtype=torch.float32, torch.tensor(...) of numbers); keep the inputs' dtype throughout (x.new_zeros(...), "
             "torch.zeros(..., dtype=q.dtype))")
# Errors whose text alone shows the mistake: (words in torch's message, the likely cause).
KNOWN_ERRORS = (
    (("einsum()", "no ellipsis"),
     "an einsum equation with fixed dims such as 'bhid,bhjd->bhij' fits 4-D inputs only: write "
     "'...id,...jd->...ij' (an ellipsis for the leading dims), or use q @ k.transpose(-2, -1)"),
    (("view size is not compatible",),
     ".view() on a non-contiguous tensor (one transposed or permuted, by your code or before it reached it): use "
     "reshape() or flatten(-2), or call .contiguous() before view()."),
    (("expected scalar type", "but found"),
     DTYPE_MIX),
    (("to have the same dtype",),
     DTYPE_MIX),
    (("modified by an inplace operation",),
     "an in-place operation (masked_fill_, +=, exp_, a slice assignment) changed a tensor that autograd saved for "
     "the backward pass (torch's message names it): use the out-of-place form (masked_fill, x = x + m)"),
    (("bitwise_and", "not implemented for"),
     "`&` was applied to a floating tensor: `&` combines bool masks only. A float mask is ADDED to the "
     "scores; block the causal future with masked_fill(~causal, float('-inf')) as well"),
)


def known_error(message: str, code: str = "") -> str | None:
    """The likely cause of an error torch raised inside the submission, when its text (and the line that raised
    it, code) shows it."""
    for words, cause in KNOWN_ERRORS:
        if all(word in message for word in words):
            return cause
    if "Boolean value of Tensor with more than one value" in message and "causal" in code:
        return ("a tensor reached `is_causal` (the line tests it as a truth value): a mask given by position went "
                "into the is_causal slot; the signature is (query, key, value, mask=None, is_causal=False)")
    transpose = FRONT_TRANSPOSE.search(code)
    if any(words in message for words in SIZE_MISMATCH) and transpose:
        return (f"{transpose.group(0)} counts dims from the front, on the line where the sizes disagree: it fits "
                "one number of dims only; the last two dims of any tensor are transpose(-2, -1)")
    return None


SIZE_MISMATCH = ("must match the size of tensor", "cannot be multiplied", "shapes cannot be", "size mismatch")
FRONT_TRANSPOSE = re.compile(r"[\w.\]\)]*\.(?:transpose\(\s*\d+\s*,\s*\d+\s*\)|t\(\)|T\b)")


def fail_raised(error, label, hint=None):
    """Fail for an error the submission raised on valid input: its type, message and line, and the likely
    cause when torch's message shows it. No hint about values: nothing was returned to judge (hint is kept
    for callers, unused). The stubs' NotImplementedError passes through."""
    remote = error.remote or {}
    message = str(remote.get("message", error))
    if error.not_implemented and "not implemented yet" in message:
        raise error
    location = student_frame(remote)
    cause = known_error(message, str(remote.get("code") or ""))
    advice = f"\nLikely cause: {cause}" if cause else ""
    fail(f"{label} raised {remote.get('type', type(error).__name__)} on valid input: {message}{location}{advice}")


# The input checks attention.py gives at its end: an error they raise is shown at the student's line that called them.
GIVEN_HELPERS = frozenset(("_check_tensor", "_check_qk", "_check_qkv", "_check_mask", "_check_mask_for", "_is_int",
                           "_check_seq_len", "_check_n_heads", "_check_mha_inputs", "_in_float32", "_check_tiled",
                           "_mask_block", "_check_append", "_check_decode_step"))
FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>[^\n]+)\n(?:    (?P<code>[^\n]*))?',
                   re.MULTILINE)


def frames_in_submission(remote):
    """[(line, function, code)] of the traceback's frames in attention.py, innermost last (the file is the one
    whose line the worker reported)."""
    frames = [(m["file"], int(m["line"]), m["function"], (m["code"] or "").strip())
              for m in FRAME.finditer(str(remote.get("traceback") or ""))]
    files = {file for file, line, _, _ in frames if line == remote.get("line")}
    return [(line, function, code) for file, line, function, code in frames if file in files]


def student_frame(remote):
    """Where the error comes from in the student's own code: the innermost frame of attention.py that is not a
    given helper (the given check it went through is named)."""
    frames = frames_in_submission(remote)
    own = [frame for frame in frames if frame[1] not in GIVEN_HELPERS]
    if own:
        line, function, code = own[-1]
        helper = next((f for _, f, _ in reversed(frames) if f in GIVEN_HELPERS), None) \
            if frames[-1][1] in GIVEN_HELPERS else None
        via = f" (raised by the given check {helper}, which this line calls)" if helper else ""
        return f"\n  at attention.py line {line}, in {function}: {code}{via}"
    if remote.get("line"):
        return f"\n  at attention.py line {remote['line']}: {str(remote.get('code') or '').strip()}"
    return ""


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


def check_built_on(measured, label, device, advice):
    """Fail when the measured call built a tensor of more than one element on a device other than `device`
    (a 0-dim tensor may be a number torch wrapped itself)."""
    elsewhere = {where: size for where, size in measured.created_on.items() if where != device and size > 1}
    if elsewhere:
        where, size = max(elsewhere.items(), key=lambda item: item[1])
        fail(f"{label} built a tensor of {size} elements on the {where} device, then returned one on {device!r}: "
             f"every tensor it builds must be built on `device` (on a GPU, one built on the CPU is copied over).\n"
             + advice)


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


def compare_pair(got, expected, label, mistakes=None, hint=None, dims=SDPA_DIMS, out_dims=SDPA_OUT_DIMS,
                 blocked=None):
    """Weights first (the likely culprit), then the output; mistakes maps explanations to (output, weights)
    (None for a part a mistake does not predict), judged on the whole pair (a swapped pair too).
    blocked: bool [..., Tq, 1], True on the query rows whose keys are all blocked."""
    output, weights = got
    expected_output, expected_weights = expected

    def check(cause=None):
        assert_close(weights, expected_weights, f"{label} weights", dims, layout="[..., Tq, Tk]", hint=hint,
                     cause=cause, blocked=blocked)
        assert_close(output, expected_output, f"{label} output", out_dims, layout="[..., Tq, dv]",
                     hint="output = weights @ v", cause=cause, blocked=blocked)

    try:
        check()
    except pytest.fail.Exception:
        cause = diagnose(tuple(got), tuple(expected), mistakes or {})  # only a failing pair reads the mistakes
        if cause is None:
            raise
        check(cause)
