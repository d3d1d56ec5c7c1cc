"""What common wrong implementations return, so a failure can name the mistake ("Likely cause: ...")."""

import math

import torch

from tests.support import oracle
from tests.support.feedback import check_tensor, fail


def scale_mistakes(q, k):
    raw = q @ k.transpose(-2, -1)
    d = q.size(-1)
    return {
        "the dot products are not scaled: multiply by 1/sqrt(d)": raw,
        "scaled by 1/d; the scale is 1/sqrt(d)": raw / d,
        "multiplied by sqrt(d); divide by it instead": raw * math.sqrt(d),
    }


def split_mistakes(x, n_heads):
    batch, length, d_model = x.shape
    d_head = d_model // n_heads
    return {
        "x was reshaped straight to [B, H, T, d_head]: that mixes positions into heads. "
        "View it as [B, T, H, d_head], then transpose(1, 2)": x.reshape(batch, n_heads, length, d_head),
        "the heads are interleaved (feature f went to head f % H): head h must hold the contiguous "
        "block h*d_head:(h+1)*d_head": x.reshape(batch, length, d_head, n_heads).permute(0, 3, 1, 2),
    }


def merge_mistakes(x):
    batch, n_heads, length, d_head = x.shape
    return {
        "x was reshaped to [B, T, H*d_head] without moving H back next to d_head: transpose(1, 2) first, "
        "then flatten the last two dims": x.reshape(batch, length, n_heads * d_head),
        "the heads are interleaved (merged feature e*H + h): flatten [B, T, H, d_head], not [B, T, d_head, H]":
            x.permute(0, 2, 3, 1).reshape(batch, length, n_heads * d_head),
    }


def key_mistakes(q, k):
    """Scores with the right scale but the keys laid out wrongly, and the length of k used as d."""
    scale = q.size(-1) ** -0.5
    q_len, k_len, d = q.size(-2), k.size(-2), q.size(-1)
    reshaped = k.reshape(*k.shape[:-2], d, k_len)  # (..., d, Tk): rows of k cut into the wrong pieces
    mistakes = {
        "k was reshaped to [..., d, Tk] instead of transposed: reshape keeps the memory order and mixes "
        "the features of different keys; use k.transpose(-2, -1)": q @ reshaped * scale,
    }
    if k_len != d:
        mistakes["the scores were scaled by 1/sqrt(Tk), the number of keys: the scale is 1/sqrt(d) with "
                 "d = q.size(-1)"] = q @ k.transpose(-2, -1) / math.sqrt(k_len)
    if q_len != d:
        mistakes["the scores were scaled by 1/sqrt(Tq), the number of queries: the scale is 1/sqrt(d) with "
                 "d = q.size(-1)"] = q @ k.transpose(-2, -1) / math.sqrt(q_len)
    return mistakes


def explicit_scale_mistakes(q, k, scale):
    """What a submission returns for attention_scores(q, k, scale) when it mishandles the argument."""
    raw = q @ k.transpose(-2, -1)
    default = raw / math.sqrt(q.size(-1))
    if scale == 0.0:
        return {"scale=0.0 was replaced by 1/sqrt(d): `scale or 1/sqrt(d)` and `if not scale:` treat 0.0 like "
                "None; test `if scale is None:`": default}
    return {"the scale argument is ignored (always 1/sqrt(d)): use it when it is not None": default,
            "the scores are divided by scale: multiply by it": raw / scale}


def causal_mask_mistakes(seq_len):
    """The causal masks a wrong tril/triu call builds, as bool [T, T] tensors."""
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool)
    mistakes = {
        "the mask is the upper triangle (triu): True must mark the ALLOWED keys, the past and the diagonal: "
        "use tril()": ones.triu(),
        "the diagonal is blocked (tril(-1)): a token may attend to itself, use tril()": ones.tril(-1),
        "the mask marks the blocked future (triu(1)) instead of the allowed keys: True = allowed, use tril()":
            ones.triu(1),
    }
    # A mask that is also all True, all False or another mistake's (short lengths) names nothing for sure.
    ambiguous = [ones, ~ones]
    return {text: mask for text, mask in mistakes.items()
            if sum(torch.equal(mask, other) for other in [*ambiguous, *mistakes.values()]) == 1}


def check_causal_mask(got, seq_len):
    """Fail with the first wrong entry, and the mistake when it is a known one, unless got is exactly the
    bool [T, T] lower triangle."""
    label = f"causal_mask({seq_len})"
    check_tensor(got, label, shape=(seq_len, seq_len), layout="[T, T]")
    expected = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
    if got.dtype != torch.bool:
        same_values = not got.dtype.is_complex and torch.equal(got.to(torch.float64), expected.to(torch.float64))
        cause = (f"\nLikely cause: the mask is a 0/1 {got.dtype} matrix: build it with dtype=torch.bool "
                 "(torch.ones(T, T, dtype=torch.bool).tril())") if same_values else ""
        fail(f"{label} has dtype {got.dtype}, expected torch.bool (True = allowed).{cause}")
    differ = got != expected
    if not differ.any():
        return
    i, j = differ.nonzero()[0].tolist()
    why = (f"query {i} may see key {j} (j <= i), so it must be True" if j <= i
           else f"key {j} is in query {i}'s future (j > i), so it must be False")
    text = (f"{label}[{i}, {j}] is {bool(got[i, j])}, but {why} ({int(differ.sum())} of {differ.numel()} entries "
            "are wrong).")
    for explanation, candidate in causal_mask_mistakes(seq_len).items():
        if torch.equal(got, candidate):
            fail(f"{text}\nLikely cause: {explanation}")
    fail(f"{text}\nHint: True marks ALLOWED keys: the lower triangle with its diagonal, "
         "torch.ones(T, T, dtype=torch.bool).tril().")


def _masked_softmax_with_nan(scores, mask):
    """softmax(scores masked by mask) with no fix for fully blocked rows: NaN there."""
    if mask.dtype == torch.bool:
        return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return torch.softmax(scores + mask, dim=-1)


def mask_mistakes(scores, mask):
    """What a wrong use of a bool mask (True = allowed) gives."""
    plain = torch.softmax(scores, dim=-1)
    inverted = "the bool mask is inverted: True means ALLOWED (torch's convention), so block where it is False"
    return {
        inverted: oracle.softmax_weights(scores, ~mask),
        inverted + " (rows with every key allowed then also become NaN)": _masked_softmax_with_nan(scores, ~mask),
        "the mask is applied after the softmax: block with -inf before it, so each row sums to 1":
            plain * mask,
        "blocked scores are set to 0 instead of -inf: exp(0) = 1 still gives them weight":
            torch.softmax(scores.masked_fill(~mask, 0.0), dim=-1),
        "the mask was ignored: block the keys where it is False": plain,
    }


def float_mask_mistakes(scores, mask):
    """What a wrong use of a floating (additive) mask gives."""
    return {
        "the float mask was used as a bool mask with only its 0.0 entries allowed: a float mask is ADDED to "
        "the scores, its finite values shift them": oracle.softmax_weights(scores, mask == 0),
        "only the -inf entries of the float mask were used: ADD the whole mask to the scores":
            oracle.softmax_weights(scores, ~torch.isneginf(mask)),
        "the float mask was read as a 0/1 mask (masked_fill(mask == 0, -inf), or mask.bool()): its 0.0 entries "
        "were blocked and -inf allowed; a float mask is ADDED to the scores": oracle.softmax_weights(scores, mask.bool()),
        "the float mask was ignored: add it to the scores": torch.softmax(scores, dim=-1),
    }


def blocked_row_mistakes(scores, mask):
    """What a masked softmax gives on fully blocked rows without the zero-row fix."""
    uniform = torch.where(mask, scores, torch.finfo(scores.dtype).min) if mask.dtype == torch.bool else None
    mistakes = {
        "a fully blocked row gives softmax(-inf, ..., -inf) = NaN: find the rows whose scores are all -inf, "
        "softmax something finite there and set those rows to 0.0": _masked_softmax_with_nan(scores, mask),
    }
    if uniform is not None:
        mistakes["a fully blocked row got uniform weights 1/Tk instead of zeros: blocked with a large finite "
                 "number (-1e9, finfo.min) instead of -inf, or the row was not set to 0.0 after the softmax"] = (
            torch.softmax(uniform, dim=-1))
    return mistakes


def float32_precision(expected):
    """A float64 result that is right only to float32 precision (a candidate for assert_close's mistakes)."""
    return expected, torch.float32


def as_pairs(weight_mistakes, v):
    """{text: weights} -> {text: (weights @ v, weights)}: what scaled_dot_product_attention returns then."""
    return {text: (weights @ v, weights) for text, weights in weight_mistakes.items()}


def causal_mistakes(q, k, v):
    """(output, weights) of scaled_dot_product_attention(q, k, v, is_causal=True) built with a wrong mask."""
    rows, columns = q.size(-2), k.size(-2)
    ones = torch.ones(rows, columns, dtype=torch.bool)
    mistakes = {
        "is_causal was ignored: block the keys j > i": oracle.sdpa(q, k, v),
        "the causal mask is inverted (triu): it must ALLOW the past and the diagonal, tril()":
            oracle.sdpa(q, k, v, mask=ones.triu()),
        "the diagonal is blocked (tril(-1)): a query may see its own key, use tril()":
            oracle.sdpa(q, k, v, mask=ones.tril(-1)),
        "the causal mask is inverted: True = ALLOWED, so the future is blocked where tril() is False":
            oracle.sdpa(q, k, v, mask=ones.triu(1)),
    }
    if rows != columns:
        mistakes["the causal mask is bottom-right aligned (tril(Tk - Tq)); is_causal is top-left aligned, as "
                 "in torch: query i sees keys j <= i, torch.ones(Tq, Tk).tril()"] = (
            oracle.sdpa(q, k, v, mask=ones.tril(columns - rows)))
    return mistakes
