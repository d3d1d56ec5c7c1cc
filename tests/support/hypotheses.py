"""Known wrong variants of each computation the tests check, in one table.

Each variant is a small pure function of the call's inputs that computes what one specific mistake
returns. When a value check fails, feedback.diagnose compares the student's result with every variant
of that computation and names one only when it matches clearly better than every other variant and
than the correct result. Adding a variant is one decorated function:

    @variant("weights", "the softmax runs over the wrong dim: use dim=-1, the keys")
    def softmax_over_queries(scores, mask=None):
        return softmax(scores.double(), mask, dim=-2).to(scores.dtype)

Kinds and their inputs (keyword arguments):
    scores       q, k, scale=None                                  -> scores
    weights      scores, mask=None                                 -> weights
    sdpa         q, k, v, mask=None, is_causal=False, scale=None   -> (output, weights)
    split_heads  x, n_heads                                        -> heads
    merge_heads  x                                                 -> merged
    mha          params, n_heads, query, key, value, mask, is_causal, bias -> (output, weights)
A variant returns None when it does not apply to this call (or cannot differ from the truth).
Every scores variant is also an sdpa variant, every weights variant one too (without is_causal), and
every sdpa, split_heads and merge_heads variant one of mha: a mistake is described once.
"""

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

INF = float("inf")


@dataclass(frozen=True)
class Result:
    """A variant's result (a tensor, or a tuple with None for a part it does not predict), compared at
    the tolerance of `tolerance` (a dtype) instead of the result's own dtype when given."""
    value: Any
    tolerance: torch.dtype | None = None
    cause: str | None = None  # the explanation, when it depends on the call (a bool or a float mask)


@dataclass(frozen=True)
class Variant:
    kind: str
    name: str
    cause: str
    compute: Callable[..., Any]


VARIANTS: dict[str, list[Variant]] = {}


def variant(kind: str, cause: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as a wrong variant of `kind`, explained by `cause`."""
    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        VARIANTS.setdefault(kind, []).append(Variant(kind, function.__name__, cause, function))
        return function
    return register


def results(kind: str, **call: Any) -> dict[str, Result]:
    """{cause: Result} of every variant of `kind` that applies to this call."""
    found: dict[str, Result] = {}
    for entry in VARIANTS.get(kind, []):
        try:
            value = entry.compute(**call)
        except (RuntimeError, ValueError, IndexError, TypeError):  # a variant whose shapes do not fit this call
            continue
        if value is None:
            continue
        result = value if isinstance(value, Result) else Result(value)
        found.setdefault(result.cause or entry.cause, result)
    return found


class Mistakes(Mapping[str, Any]):
    """{cause: candidate}, computed on first use: only a check that fails reads it, so a passing test never
    pays for the variants (nor for the calls to the submission some of them make)."""

    def __init__(self, compute: Callable[[], Mapping[str, Any]],
                 second: Callable[[], tuple[Any, Any, Mapping[str, Any]]] | None = None) -> None:
        self._compute = compute
        self._known: dict[str, Any] | None = None
        # second() -> (got, expected, mistakes) of the same computation on a second, independent input: a
        # cause is named only when it explains that call too (feedback.diagnose). None: one input is evidence.
        self.second = second

    def confirmed_by(self, second: Callable[[], tuple[Any, Any, Mapping[str, Any]]]) -> "Mistakes":
        """These mistakes, named only when the same one also explains second() (got, expected, mistakes)."""
        return Mistakes(self._entries, second)

    def _entries(self) -> dict[str, Any]:
        if self._known is None:
            self._known = dict(self._compute())
        return self._known

    def __getitem__(self, cause: str) -> Any:
        return self._entries()[cause]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def __or__(self, other: Mapping[str, Any]) -> "Mistakes":
        return Mistakes(lambda: {**self._entries(), **other}, self.second)


def as_mistakes(kind: str, **call: Any) -> Mistakes:
    """results() in the {cause: candidate} form of feedback.assert_close's `mistakes`, computed when read."""
    return Mistakes(lambda: {cause: (r.value, r.tolerance) if r.tolerance else r.value
                             for cause, r in results(kind, **call).items()})


# -- the correct computation, with knobs -------------------------------------------------------------

def default_scale(q: torch.Tensor) -> float:
    return 1.0 / math.sqrt(max(q.size(-1), 1))


def dot(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return q.double() @ k.double().transpose(-2, -1)


def apply_mask(scores: torch.Tensor, mask: torch.Tensor | None, fill: float = -INF) -> torch.Tensor:
    if mask is None:
        return scores
    if mask.dtype == torch.bool:
        return scores.masked_fill(~mask, fill)
    return scores + mask.double()


def softmax(scores: torch.Tensor, mask: torch.Tensor | None = None, fill: float = -INF, zero_rows: bool = True,
            dim: int = -1) -> torch.Tensor:
    """The masked softmax (float64); fully blocked rows give zeros unless zero_rows is False (NaN then)."""
    scores = apply_mask(scores, mask, fill)
    weights = torch.softmax(scores, dim=dim)
    if not zero_rows:
        return weights
    blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    return weights.masked_fill(blocked, 0.0)


def causal(q_len: int, k_len: int, diagonal: int = 0) -> torch.Tensor:
    return torch.ones(q_len, k_len, dtype=torch.bool).tril(diagonal)


def combine(mask: torch.Tensor | None, allowed: torch.Tensor | None) -> torch.Tensor | None:
    """mask AND allowed (a causal bool [Tq, Tk]); either may be None."""
    if allowed is None or mask is None:
        return mask if allowed is None else allowed
    if mask.dtype == torch.bool:
        return mask & allowed
    return mask.masked_fill(~allowed, -INF)


def attend(q, k, v, mask=None, is_causal=False, scale=None, *, scores=None, weights=None, allowed=None):
    """(output, weights) in q's dtype, computed in float64; scores / weights / allowed replace one step:
    scores [..., Tq, Tk] (float64), weights(scores, mask) -> float64, allowed the causal bool [Tq, Tk]."""
    if scores is None:
        scores = dot(q, k) * (default_scale(q) if scale is None else scale)
    if is_causal and allowed is None:
        allowed = causal(q.size(-2), k.size(-2))
    combined = combine(mask, allowed if is_causal else None)
    w = (weights or softmax)(scores, combined)
    return (w @ v.double()).to(q.dtype), w.to(q.dtype)


# -- scores: attention_scores(q, k, scale) ------------------------------------------------------------

def _scaled(q, k, factor):
    return (dot(q, k) * factor).to(q.dtype)


@variant("scores", "the dot products are not scaled: multiply by 1/sqrt(d)")
def scores_not_scaled(q, k, scale=None):
    return _scaled(q, k, 1.0) if scale != 1.0 else None


@variant("scores", "the scores were scaled by 1/d (1/sqrt(d) applied twice gives the same); the scale is 1/sqrt(d), "
                   "applied once")
def scores_over_d(q, k, scale=None):
    return _scaled(q, k, 1.0 / q.size(-1)) if scale is None and q.size(-1) > 1 else None


@variant("scores", "the scores were multiplied by sqrt(d); divide by it instead")
def scores_times_sqrt_d(q, k, scale=None):
    return _scaled(q, k, math.sqrt(q.size(-1))) if scale is None and q.size(-1) > 1 else None


@variant("scores", "the scale was applied twice (to q and again to the scores, or to both q and k): apply it once")
def scores_scaled_twice(q, k, scale=None):
    return _scaled(q, k, scale * scale) if scale not in (None, 0.0, 1.0) else None  # None: that is 1/d


@variant("scores", "the scores were scaled by 1/sqrt(Tk), the number of keys: the scale is 1/sqrt(d) with "
                   "d = q.size(-1)")
def scores_over_sqrt_tk(q, k, scale=None):
    return _scaled(q, k, k.size(-2) ** -0.5) if scale is None and k.size(-2) != q.size(-1) else None


@variant("scores", "the scores were scaled by 1/sqrt(Tq), the number of queries: the scale is 1/sqrt(d) with "
                   "d = q.size(-1)")
def scores_over_sqrt_tq(q, k, scale=None):
    return _scaled(q, k, q.size(-2) ** -0.5) if scale is None and q.size(-2) != q.size(-1) else None


def _over_sqrt_leading_dim(q, k, scale, dim):
    if scale is not None or q.dim() < 3 or dim >= q.dim() - 2 or q.size(dim) in (q.size(-1), q.size(-2), 1):
        return None
    return _scaled(q, k, q.size(dim) ** -0.5)


@variant("scores", "d was read from dim 0 (q.size(0), the batch), not the last dim: d = q.size(-1)")
def scores_over_sqrt_dim_0(q, k, scale=None):
    return _over_sqrt_leading_dim(q, k, scale, 0)


@variant("scores", "d was read from dim 1 (q.size(1), the heads of a 4-D q), not the last dim: d = q.size(-1)")
def scores_over_sqrt_dim_1(q, k, scale=None):
    return _over_sqrt_leading_dim(q, k, scale, 1)


@variant("scores", "the scale uses an integer square root (math.isqrt(d), int(math.sqrt(d)) or d ** 0.5 // 1): "
                   "1/sqrt(d) is a float, math.sqrt(d)")
def scores_over_isqrt_d(q, k, scale=None):
    d = q.size(-1)
    return _scaled(q, k, 1.0 / math.isqrt(d)) if scale is None and d > 1 and math.isqrt(d) ** 2 != d else None


@variant("scores", "k.transpose(1, 2) swaps heads and positions of a 4-D k: transpose the last two dims, "
                   "k.transpose(-2, -1)")
def scores_transpose_1_2(q, k, scale=None):
    if k.dim() != 4 or k.size(1) != k.size(3) or k.size(2) != q.size(3):
        return None
    factor = default_scale(q) if scale is None else scale
    return (q.double() @ k.double().transpose(1, 2) * factor).to(q.dtype)


@variant("scores", "k was reshaped to [..., d, Tk] instead of transposed: reshape keeps the memory order and "
                   "mixes the features of different keys; use k.transpose(-2, -1)")
def scores_reshaped_k(q, k, scale=None):
    factor = default_scale(q) if scale is None else scale
    reshaped = k.double().reshape(*k.shape[:-2], k.size(-1), k.size(-2))
    return (q.double() @ reshaped * factor).to(q.dtype)


@variant("scores", "the scale argument is ignored (always 1/sqrt(d)): use it when it is not None")
def scores_scale_ignored(q, k, scale=None):
    return _scaled(q, k, default_scale(q)) if scale not in (None, 0.0) else None


@variant("scores", "scale=0.0 was replaced by 1/sqrt(d): `scale or 1/sqrt(d)` and `if not scale:` treat 0.0 like "
                   "None; test `if scale is None:`")
def scores_zero_scale_as_none(q, k, scale=None):
    return _scaled(q, k, default_scale(q)) if scale == 0.0 else None


@variant("scores", "the scores are divided by scale: multiply by it")
def scores_divided_by_scale(q, k, scale=None):
    return _scaled(q, k, 1.0 / scale) if scale not in (None, 0.0, 1.0) else None


@variant("scores", "the scale is 0 (every score 0, uniform weights): compute 1/sqrt(d) in floating point "
                   "(1 / d ** 0.5 or math.sqrt), not with integer division")
def scores_zero_scale(q, k, scale=None):
    return _scaled(q, k, 0.0) if scale is None else None


@variant("scores", "the result is right to float32 precision only: something was computed in float32 "
                   "(.float()); keep the inputs' dtype throughout")
def scores_in_float32(q, k, scale=None):
    if q.dtype != torch.float64:
        return None
    factor = default_scale(q) if scale is None else scale
    return Result((q.float() @ k.float().transpose(-2, -1) * factor).double(), torch.float32)


@variant("scores", "the dtype was not kept: float64 inputs must give a float64 result (no .float())")
def scores_dtype_not_kept(q, k, scale=None):
    factor = default_scale(q) if scale is None else scale
    return _scaled(q, k, factor).float() if q.dtype == torch.float64 else None


# -- weights: attention_weights(scores, mask) --------------------------------------------------------

def _bool(mask):
    return mask is not None and mask.dtype == torch.bool


def _float(mask):
    return mask is not None and mask.dtype != torch.bool


def _weights(scores, mask=None, **knobs):
    return softmax(scores.double(), mask, **knobs).to(scores.dtype)


def _has_blocked_rows(scores, mask):
    return bool(torch.isneginf(apply_mask(scores.double(), mask)).all(-1).any())


@variant("weights", "the softmax runs over the wrong dim: use dim=-1, the keys")
def weights_wrong_dim(scores, mask=None):
    return _weights(scores, mask, dim=-2) if mask is None else None


@variant("weights", "the max subtracted before exp() was taken over the wrong dim: subtract each row's own max, "
                    "over the keys (amax(dim=-1, keepdim=True))")
def weights_max_over_queries(scores, mask=None):
    shifted = apply_mask(scores.double(), mask)
    column_max = shifted.amax(-2, keepdim=True)
    exp = torch.exp(shifted - torch.where(torch.isneginf(column_max), torch.zeros_like(column_max), column_max))
    total = exp.sum(-1, keepdim=True)
    return torch.where(total == 0, torch.zeros_like(exp), exp / total).to(scores.dtype)


@variant("weights", "exp() overflowed to inf: softmax written as exp(s) / exp(s).sum() without subtracting each "
                    "row's max first (torch.softmax does that; or subtract s.amax(-1, keepdim=True))")
def weights_without_max_subtracted(scores, mask=None):
    exp = apply_mask(scores, mask).exp()  # in the scores' dtype, where it overflows
    total = exp.sum(dim=-1, keepdim=True)
    if not torch.isinf(total).any():
        return None  # no overflow: the same as the correct softmax (fully blocked rows are another mistake)
    return exp / total.masked_fill(total == 0, 1.0)


@variant("weights", "the bool mask is inverted: True means ALLOWED (torch's convention), so block where it is False")
def weights_mask_inverted(scores, mask=None):
    return _weights(scores, ~mask) if _bool(mask) else None


@variant("weights", "the bool mask is inverted: True means ALLOWED (torch's convention), so block where it is "
                    "False (rows with every key allowed then also become NaN)")
def weights_mask_inverted_nan(scores, mask=None):
    return _weights(scores, ~mask, zero_rows=False) if _bool(mask) else None


@variant("weights", "the mask is applied after the softmax: block with -inf before it, so each row sums to 1")
def weights_mask_after_softmax(scores, mask=None):
    return (torch.softmax(scores.double(), -1) * mask).to(scores.dtype) if _bool(mask) else None


@variant("weights", "blocked scores are set to 0 instead of -inf: exp(0) = 1 still gives them weight")
def weights_fill_zero(scores, mask=None):
    return _weights(scores, mask, fill=0.0) if _bool(mask) else None


@variant("weights", "the mask was ignored: block the keys where it is False")
def weights_mask_ignored(scores, mask=None):
    return _weights(scores) if _bool(mask) else None


@variant("weights", "the bool mask was added to the scores as 0/1: a bool mask blocks (-inf where False), "
                    "only a float mask is added")
def weights_bool_mask_added(scores, mask=None):
    return _weights(scores, mask.double()) if _bool(mask) else None


@variant("weights", "a fully blocked row gives softmax(-inf, ..., -inf) = NaN: find the rows whose scores are "
                    "all -inf, softmax something finite there and set those rows to 0.0")
def weights_blocked_rows_nan(scores, mask=None):
    return _weights(scores, mask, zero_rows=False) if mask is not None else None


@variant("weights", "a fully blocked row got uniform weights 1/Tk instead of zeros: blocked with a large finite "
                    "number (-1e9, finfo.min) instead of -inf, or the row was not set to 0.0 after the softmax")
def weights_blocked_with_finite(scores, mask=None):
    if not _bool(mask) or not _has_blocked_rows(scores, mask):
        return None
    return _weights(scores, mask, fill=-1e9)


@variant("weights", "the float mask was used as a bool mask with only its 0.0 entries allowed: a float mask is "
                    "ADDED to the scores, its finite values shift them")
def weights_float_mask_zero_allowed(scores, mask=None):
    return _weights(scores, mask == 0) if _float(mask) else None


@variant("weights", "only the -inf entries of the float mask were used: ADD the whole mask to the scores")
def weights_float_mask_only_inf(scores, mask=None):
    return _weights(scores, ~torch.isneginf(mask)) if _float(mask) else None


@variant("weights", "the float mask was read as a 0/1 mask (masked_fill(mask == 0, -inf), or mask.bool()): its "
                    "0.0 entries were blocked and -inf allowed; a float mask is ADDED to the scores")
def weights_float_mask_as_bool(scores, mask=None):
    return _weights(scores, mask.bool()) if _float(mask) else None


@variant("weights", "the float mask was ignored: add it to the scores")
def weights_float_mask_ignored(scores, mask=None):
    return _weights(scores) if _float(mask) else None


@variant("weights", "the float mask was multiplied with the scores: a float mask is ADDED (scores + mask)")
def weights_float_mask_multiplied(scores, mask=None):
    if not _float(mask):
        return None
    product = scores.double() * mask.double()  # 0 * -inf = NaN, as in the student's code
    return torch.softmax(product, dim=-1).to(scores.dtype)


@variant("weights", "the weights are right to float32 precision only: they were computed in float32 (.float(), "
                    "or softmax(..., dtype=torch.float32)) and cast back; keep float64 throughout")
def weights_in_float32(scores, mask=None):
    if scores.dtype != torch.float64:
        return None
    return Result(_weights(scores.float(), None if mask is None else (mask if _bool(mask) else mask.float()))
                  .double(), torch.float32)


@variant("weights", "the dtype was not kept: float64 scores must give float64 weights (no .float(), no dtype= "
                    "in softmax)")
def weights_dtype_not_kept(scores, mask=None):
    return _weights(scores, mask).float() if scores.dtype == torch.float64 else None


# -- sdpa: scaled_dot_product_attention(q, k, v, mask, is_causal, scale) -----------------------------

def _lift_scores(entry: Variant) -> Callable[..., Any]:
    def lifted(q, k, v, mask=None, is_causal=False, scale=None):
        found = entry.compute(q=q, k=k, scale=scale)
        if found is None:
            return None
        if isinstance(found, Result):  # a precision/dtype variant: the whole call in that precision
            return _sdpa_precision(q, k, v, mask, is_causal, scale, found)
        if found.dtype != q.dtype:
            return None
        return attend(q, k, v, mask, is_causal, scores=found.double())
    return lifted


def _sdpa_precision(q, k, v, mask, is_causal, scale, found: Result):
    low = [x.float() for x in (q, k, v)]
    low_mask = mask if mask is None or _bool(mask) else mask.float()
    output, weights = attend(*low, low_mask, is_causal, scale)
    return Result((output.double(), weights.double()), found.tolerance)


def _lift_weights(entry: Variant) -> Callable[..., Any]:
    def lifted(q, k, v, mask=None, is_causal=False, scale=None):
        if is_causal:
            return None  # where the causal mask enters varies between implementations
        scores = (dot(q, k) * (default_scale(q) if scale is None else scale)).to(q.dtype)
        found = entry.compute(scores=scores, mask=mask)
        if found is None or isinstance(found, Result) or found.dtype != q.dtype:
            return None
        return (found.double() @ v.double()).to(q.dtype), found
    return lifted


for _entry in list(VARIANTS["scores"]):
    if _entry.name not in ("scores_in_float32", "scores_dtype_not_kept"):
        VARIANTS.setdefault("sdpa", []).append(Variant("sdpa", _entry.name, _entry.cause, _lift_scores(_entry)))
for _entry in list(VARIANTS["weights"]):
    if _entry.name not in ("weights_in_float32", "weights_dtype_not_kept"):
        VARIANTS["sdpa"].append(Variant("sdpa", _entry.name, _entry.cause, _lift_weights(_entry)))


@variant("sdpa", "the default scale used the values' width: 1/sqrt(dv) with dv = v.size(-1); it is 1/sqrt(d) "
                 "with d = q.size(-1), the query/key width")
def sdpa_scale_by_value_width(q, k, v, mask=None, is_causal=False, scale=None):
    return attend(q, k, v, mask, is_causal, v.size(-1) ** -0.5) if scale is None and v.size(-1) != q.size(-1) else None


def _causal_variant(diagonal: int = 0, upper: bool = False, when: Callable[[int, int], bool] = lambda tq, tk: True):
    def compute(q, k, v, mask=None, is_causal=False, scale=None):
        q_len, k_len = q.shape[-2], k.shape[-2]
        if not is_causal or not when(q_len, k_len):
            return None
        ones = torch.ones(q_len, k_len, dtype=torch.bool)
        allowed = ones.triu(diagonal) if upper else ones.tril(diagonal)
        return attend(q, k, v, mask, True, scale, allowed=allowed)
    return compute


def _register(kind: str, name: str, cause: str, compute: Callable[..., Any]) -> None:
    VARIANTS.setdefault(kind, []).append(Variant(kind, name, cause, compute))


_register("sdpa", "causal_upper", "the causal mask is inverted (triu): it must ALLOW the past and the diagonal, "
          "tril()", _causal_variant(upper=True))
_register("sdpa", "causal_without_diagonal", "the diagonal is blocked (tril(-1)): a query may see its own key, use "
          "tril()", _causal_variant(-1))
_register("sdpa", "causal_one_ahead", "the causal mask is off by one: it also allows key i + 1 (tril(1)); query i "
          "sees keys j <= i, tril()", _causal_variant(1))
_register("sdpa", "causal_marks_future", "the causal mask is inverted: True = ALLOWED, so the future is blocked "
          "where tril() is False", _causal_variant(1, upper=True))
_register("sdpa", "causal_bottom_right", "the causal mask is bottom-right aligned (tril(Tk - Tq)); is_causal is "
          "top-left aligned, as in torch: query i sees keys j <= i, torch.ones(Tq, Tk).tril()",
          lambda q, k, v, mask=None, is_causal=False, scale=None: _causal_variant(
              k.size(-2) - q.size(-2), when=lambda tq, tk: tq != tk)(q, k, v, mask, is_causal, scale))


@variant("sdpa", "the float mask was added before the scaling, so its finite values were scaled too: scale the "
                 "dot products first, then add the mask")
def sdpa_float_mask_scaled(q, k, v, mask=None, is_causal=False, scale=None):
    factor = default_scale(q) if scale is None else scale
    if not _float(mask) or factor == 1.0:
        return None
    return attend(q, k, v, None, is_causal, scale, scores=(dot(q, k) + mask.double()) * factor)


@variant("sdpa", "is_causal was ignored: block the keys j > i")
def sdpa_causal_ignored(q, k, v, mask=None, is_causal=False, scale=None):
    return attend(q, k, v, mask, False, scale) if is_causal and mask is None and q.size(-2) > 1 else None


@variant("sdpa", "is_causal was ignored when Tq != Tk (the causal mask was only built for square scores): query i "
                 "sees keys j <= i whatever the lengths, torch.ones(Tq, Tk).tril()")
def sdpa_causal_ignored_when_lengths_differ(q, k, v, mask=None, is_causal=False, scale=None):
    return attend(q, k, v, mask, False, scale) if is_causal and 1 < q.size(-2) != k.size(-2) else None


@variant("sdpa", "is_causal was skipped for a single query (Tq = 1): top-left aligned, that query is query 0 and "
                 "sees key 0 only, whatever Tk")
def sdpa_causal_skipped_for_one_query(q, k, v, mask=None, is_causal=False, scale=None):
    return attend(q, k, v, mask, False, scale) if is_causal and q.size(-2) == 1 < k.size(-2) else None


@variant("sdpa", "is_causal was ignored when a mask was given (or always): apply both")
def sdpa_causal_dropped_for_mask(q, k, v, mask=None, is_causal=False, scale=None):
    return attend(q, k, v, mask, False, scale) if is_causal and mask is not None else None


@variant("sdpa", "the mask was ignored when is_causal=True (dropped for the causal mask, or never applied): apply "
                 "both")
def sdpa_mask_dropped_for_causal(q, k, v, mask=None, is_causal=False, scale=None):
    if not is_causal or mask is None:
        return None
    found = attend(q, k, v, None, True, scale)
    if _bool(mask):
        return found
    return Result(found, cause="the float mask was ignored when is_causal=True (never added to the scores, or "
                               "dropped for the causal mask): add it AND block the causal future")


@variant("sdpa", "the masks were combined with OR: a key is allowed only if BOTH allow it (AND)")
def sdpa_masks_ored(q, k, v, mask=None, is_causal=False, scale=None):
    if not is_causal or not _bool(mask):
        return None
    return attend(q, k, v, mask | causal(q.size(-2), k.size(-2)), False, scale)


@variant("sdpa", "the output multiplies v by the scores: use the weights, output = weights @ v")
def sdpa_output_from_scores(q, k, v, mask=None, is_causal=False, scale=None):
    if mask is not None or is_causal:
        return None
    scores = dot(q, k) * (default_scale(q) if scale is None else scale)
    return (scores @ v.double()).to(q.dtype), attend(q, k, v, scale=scale)[1]


@variant("sdpa", "the scores are returned instead of the weights: return softmax(scores), the weights the output "
                 "was computed with")
def sdpa_returns_scores(q, k, v, mask=None, is_causal=False, scale=None):
    if mask is not None or is_causal:
        return None
    scores = (dot(q, k) * (default_scale(q) if scale is None else scale)).to(q.dtype)
    return attend(q, k, v, scale=scale)[0], scores


@variant("sdpa", "the pair is returned in the wrong order: return (output, weights), not (weights, output)")
def sdpa_pair_swapped(q, k, v, mask=None, is_causal=False, scale=None):
    output, weights = attend(q, k, v, mask, is_causal, scale)
    return weights, output


@variant("sdpa", "output and weights are right to float32 precision only: something was computed in float32 "
                 "(.float()); keep float64 throughout")
def sdpa_in_float32(q, k, v, mask=None, is_causal=False, scale=None):
    if q.dtype != torch.float64:
        return None
    return _sdpa_precision(q, k, v, mask, is_causal, scale, Result(None, torch.float32))


@variant("sdpa", "the dtype was not kept: float64 inputs must give float64 output and weights (no .float())")
def sdpa_dtype_not_kept(q, k, v, mask=None, is_causal=False, scale=None):
    if q.dtype != torch.float64:
        return None
    return tuple(part.float() for part in attend(q, k, v, mask, is_causal, scale))


# -- heads: split_heads(x, n_heads), merge_heads(x) -------------------------------------------------

@variant("split_heads", "x was reshaped straight to [B, H, T, d_head]: that mixes positions into heads. View it "
                        "as [B, T, H, d_head], then transpose(1, 2)")
def split_reshaped_straight(x, n_heads):
    batch, length, d_model = x.shape
    return x.reshape(batch, n_heads, length, d_model // n_heads)


@variant("split_heads", "the heads are interleaved (feature f went to head f % H): head h must hold the "
                        "contiguous block h*d_head:(h+1)*d_head")
def split_interleaved(x, n_heads):
    batch, length, d_model = x.shape
    return x.reshape(batch, length, d_model // n_heads, n_heads).permute(0, 3, 1, 2)


@variant("split_heads", "the last two dims are swapped: the result is [B, H, d_head, T]; move only H in front of "
                        "T, x.view(B, T, H, d_head).transpose(1, 2)")
def split_wrong_permutation(x, n_heads):
    batch, length, d_model = x.shape
    return x.reshape(batch, length, n_heads, d_model // n_heads).permute(0, 2, 3, 1)


@variant("merge_heads", "x was reshaped to [B, T, H*d_head] without moving H back next to d_head: transpose(1, 2) "
                        "first, then flatten the last two dims")
def merge_without_transpose(x):
    batch, n_heads, length, d_head = x.shape
    return x.reshape(batch, length, n_heads * d_head)


@variant("merge_heads", "the heads are interleaved (merged feature e*H + h): flatten [B, T, H, d_head], not "
                        "[B, T, d_head, H]")
def merge_interleaved(x):
    batch, n_heads, length, d_head = x.shape
    return x.permute(0, 2, 3, 1).reshape(batch, length, n_heads * d_head)


# -- mha: MultiHeadAttention(d_model, n_heads, bias)(query, key, value, mask, is_causal) -----------

@dataclass(frozen=True)
class Slips:
    """One way to get MultiHeadAttention wrong (the defaults are the correct computation)."""
    sdpa: Callable[..., Any] | None = None  # an sdpa variant used for the attention
    split: Callable[..., Any] | None = None
    merge: Callable[..., Any] | None = None
    projections: tuple[tuple[str, str, str], ...] = ()  # (q, k or v, the layer used, the input it was applied to)
    untransposed: tuple[str, ...] = ()  # layers whose weight was used as x @ weight
    without_bias: tuple[str, ...] = ()  # layers whose bias was left out
    with_w_o: bool = True
    scale: float | None = None
    mask_inverted: bool = False
    pass_mask: bool = True
    pass_causal: bool = True
    average_heads: bool = False


RIGHT_PROJECTIONS = {"q": ("w_q", "query"), "k": ("w_k", "key"), "v": ("w_v", "value")}
ROLE_NAMES = {"q": "queries", "k": "keys", "v": "values"}


def _split(x, n_heads):
    return x.unflatten(-1, (n_heads, x.size(-1) // n_heads)).transpose(1, 2)


def _merge(x):
    return x.transpose(1, 2).flatten(-2)


def forward(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, bias=True, slips=Slips()):
    """(output, weights) of multi-head attention with the given slips, in query's dtype."""
    key = key if key is not None else query  # (the defaults of forward)
    value = value if value is not None else key
    sources = {"query": query, "key": key, "value": value}

    def linear(x, name):
        weight = params[f"{name}.weight"].double()
        b = None if name in slips.without_bias else params.get(f"{name}.bias")
        return F.linear(x.double(), weight.T if name in slips.untransposed else weight, None if b is None else b.double())

    split = slips.split or _split
    used = {**RIGHT_PROJECTIONS, **{role: (layer, source) for role, layer, source in slips.projections}}
    q, k, v = (split(linear(sources[used[role][1]], used[role][0]), n_heads) for role in ("q", "k", "v"))
    if q is None or k is None or v is None:
        return None
    attention_mask = mask if slips.pass_mask else None
    if slips.mask_inverted and not _bool(attention_mask):
        return None
    if slips.mask_inverted:
        attention_mask = ~attention_mask
    causal_flag = is_causal if slips.pass_causal else False
    found = (slips.sdpa or attend)(q, k, v, attention_mask, causal_flag, slips.scale)
    if found is None or isinstance(found, Result):
        return None
    heads, weights = found
    if heads.dim() != 4:
        return None
    merged = (slips.merge or _merge)(heads.double())
    output = linear(merged, "w_o") if slips.with_w_o else merged
    weights = weights.mean(dim=1) if slips.average_heads else weights
    return output.to(query.dtype), weights.to(query.dtype)


def _mha(cause: str, **slips: Any) -> None:
    def compute(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, bias=True):
        return forward(params, n_heads, query, key, value, mask, is_causal, bias, Slips(**slips))
    _register("mha", cause[:40], cause, compute)


def _lift_to_mha(entry: Variant, field: str) -> None:
    def compute(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, bias=True):
        if field == "sdpa":
            def step(*args):
                return entry.compute(*args)
        elif field == "split":
            def step(x, heads):
                return entry.compute(x=x, n_heads=heads)
        else:
            def step(x):
                return entry.compute(x=x)
        return forward(params, n_heads, query, key, value, mask, is_causal, bias, Slips(**{field: step}))
    _register("mha", entry.name, entry.cause, compute)


DESCRIBED_BY_MHA = ("sdpa_in_float32", "sdpa_dtype_not_kept", "sdpa_pair_swapped", "weights_mask_ignored",
                    "weights_float_mask_ignored", "sdpa_causal_ignored", "sdpa_causal_ignored_when_lengths_differ",
                    "sdpa_causal_dropped_for_mask", "sdpa_mask_dropped_for_causal")
for _entry in list(VARIANTS["sdpa"]):
    if _entry.name not in DESCRIBED_BY_MHA:
        _lift_to_mha(_entry, "sdpa")
for _entry in VARIANTS["split_heads"]:
    _lift_to_mha(_entry, "split")
for _entry in VARIANTS["merge_heads"]:
    _lift_to_mha(_entry, "merge")

_mha("w_o was forgotten: apply self.w_o to the merged heads", with_w_o=False)


def _projection_cause(role: str, layer: str, source: str) -> str:
    right_layer, right_source = RIGHT_PROJECTIONS[role]
    what = ROLE_NAMES[role]
    if source == right_source:
        return f"the {what} were projected with {layer}: project {right_source} with {right_layer}"
    if layer == right_layer:
        return f"the {what} were projected from {source}, not {right_source}: {role} = {layer}({right_source})"
    return f"the {what} were computed as {layer}({source}); they are {right_layer}({right_source})"


# Every projection with one layer or input swapped, whichever of q, k and v it is: the table is the structure of
# the computation, not a list of mistakes seen so far. Self-attention cannot tell most apart (query, key and value
# are one tensor); a cross-attention test names them.
def _projection_slip(role: str, layer: str, source: str) -> None:
    slips = Slips(projections=((role, layer, source),))

    def compute(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, bias=True):
        given = {"query": query, "key": key, "value": value}
        if given[RIGHT_PROJECTIONS[role][1]] is None:  # left to its default: the defaults' own variants say it
            return None
        return forward(params, n_heads, query, key, value, mask, is_causal, bias, slips)
    cause = _projection_cause(role, layer, source)
    _register("mha", cause[:40], cause, compute)


for _role in RIGHT_PROJECTIONS:
    for _layer in ("w_q", "w_k", "w_v"):
        for _source in ("query", "key", "value"):
            if (_layer, _source) != RIGHT_PROJECTIONS[_role]:
                _projection_slip(_role, _layer, _source)
IN_LAYERS, ALL_LAYERS = ("w_q", "w_k", "w_v"), ("w_q", "w_k", "w_v", "w_o")
_mha("the projection weights were used untransposed (x @ w.weight) in all four layers: nn.Linear computes "
     "x @ weight.T + bias; call the layer, self.w_q(x)", untransposed=ALL_LAYERS)
_mha("the projection weights of w_q, w_k and w_v were used untransposed (x @ w.weight): nn.Linear computes "
     "x @ weight.T + bias; call the layer, self.w_q(x)", untransposed=IN_LAYERS)
_mha("the projections' biases were not added (in all four layers): call the nn.Linear layers (self.w_q(x)), "
     "which add them", without_bias=ALL_LAYERS)
_mha("the projections' biases were not added in w_q, w_k and w_v: call the nn.Linear layers (self.w_q(x)), "
     "which add them", without_bias=IN_LAYERS)
_mha("the mask is inverted: True means ALLOWED", mask_inverted=True)


@variant("mha", "the mask was ignored: not passed on to scaled_dot_product_attention, or without effect there")
def mha_mask_ignored(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, bias=True):
    if mask is None:
        return None
    found = forward(params, n_heads, query, key, value, mask, is_causal, bias, Slips(pass_mask=False))
    if _bool(mask):
        return found
    return Result(found, cause="the float mask was ignored: not passed on to scaled_dot_product_attention, or "
                               "never added to the scores there")


@variant("mha", "is_causal was ignored: not passed on to scaled_dot_product_attention, or without effect there")
def mha_causal_ignored(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, bias=True):
    return forward(params, n_heads, query, key, value, mask, False, bias) if is_causal else None
_mha("the weights were averaged over the heads: return the per-head weights [B, H, Tq, Tk]", average_heads=True)


@variant("mha", "the scores were scaled by 1/sqrt(d_model); each head's scale is 1/sqrt(d_head) (leave scale=None)")
def mha_scale_by_d_model(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, bias=True):
    return forward(params, n_heads, query, key, value, mask, is_causal, bias, Slips(scale=query.size(-1) ** -0.5))


@variant("mha", "key and value were ignored (self-attention over query only): project key with w_k and value "
                "with w_v")
def mha_self_attention_only(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, bias=True):
    if key is None or (mask is not None and key.size(1) != query.size(1)):
        return None
    return forward(params, n_heads, query, None, None, mask, is_causal, bias)


@variant("mha", "value defaulted to query; it defaults to key")
def mha_value_defaults_to_query(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, bias=True):
    if key is None or value is not None or key.shape != query.shape:
        return None
    return forward(params, n_heads, query, key, query, mask, is_causal, bias)


@variant("mha", "is_causal defaults to True in forward: the lab's default is is_causal=False")
def mha_causal_by_default(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, bias=True):
    return None if is_causal else forward(params, n_heads, query, key, value, mask, True, bias)
