"""Fresh mistake in mha, appended to the reference: a whole file (the per-head einsum style) whose MultiHeadAttention.forward defaults value to query instead of key
Written by a helper who read only the handout, the stubs and the public tests."""

import math

import torch
import torch.nn as nn


class DimensionMismatchError(ValueError):
    """Raised when d_model cannot be split evenly into n_heads heads."""


def _scale_for(d, scale):
    return d ** -0.5 if scale is None else scale


def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    s = _scale_for(q.shape[-1], scale)
    return (q @ k.mT) * s


def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    pos = torch.arange(seq_len, device=device)
    return (pos.view(-1, 1) - pos.view(1, -1)) >= 0


def _as_bias(mask, like):
    """A mask as an additive bias in like's dtype (bool True -> 0, False -> -inf)."""
    if mask.dtype != torch.bool:
        return mask
    bias = torch.zeros(mask.shape, dtype=like.dtype, device=like.device)
    return bias.masked_fill(~mask, -math.inf)


def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        scores = scores + _as_bias(mask, scores)
    # Max trick; an all -inf row has max -inf, clamped to the dtype's lowest finite value so the
    # exponentials become exactly 0 instead of NaN.  In any other row the max element contributes
    # exp(0) = 1, so the denominator is >= 1 there and clamping it to 1 changes nothing.
    lowest = torch.finfo(scores.dtype).min
    peak = scores.detach().amax(-1, keepdim=True).clamp(min=lowest)
    ex = (scores - peak).exp()
    return ex / ex.sum(-1, keepdim=True).clamp(min=1.0)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    if mask is not None:
        _check_mask_for(mask, q, k)
    scores = attention_scores(q, k, scale)
    if is_causal:
        i = torch.arange(q.shape[-2], device=q.device).unsqueeze(-1)
        j = torch.arange(k.shape[-2], device=q.device).unsqueeze(0)
        future_bias = torch.zeros((), dtype=scores.dtype, device=q.device).expand(i.shape[0], j.shape[1])
        future_bias = future_bias.masked_fill(j > i, -math.inf)
        mask = future_bias if mask is None else _as_bias(mask, scores) + future_bias
    weights = attention_weights(scores, mask)
    return torch.einsum("...qk,...kc->...qc", weights, v), weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None, is_causal=False):
        return scaled_dot_product_attention(query, key, value, mask=mask, is_causal=is_causal)


def _d_head(d_model, n_heads):
    _check_n_heads(d_model, n_heads)
    if d_model % n_heads:
        raise DimensionMismatchError(
            f"n_heads={n_heads} does not divide d_model={d_model} ({d_model} % {n_heads} = {d_model % n_heads})")
    return d_model // n_heads


def split_heads(x, n_heads):
    d_head = _d_head(x.shape[-1], n_heads)
    b, t = x.shape[0], x.shape[1]
    return torch.einsum("bthe->bhte", x.reshape(b, t, n_heads, d_head))


def merge_heads(x):
    return torch.einsum("bhte->bthe", x).flatten(start_dim=2)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        self.d_head = _d_head(d_model, n_heads)
        self.n_heads, self.d_model = n_heads, d_model
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def _in_heads(self, lin, x):
        """Project x [B, T, d_model] straight into heads [B, H, T, d_head], no split afterwards."""
        w = lin.weight.view(self.n_heads, self.d_head, self.d_model)
        y = torch.einsum("btm,hem->bhte", x, w)
        if lin.bias is not None:
            y = y + lin.bias.view(1, self.n_heads, 1, self.d_head)
        return y

    def _out_of_heads(self, heads):
        """w_o applied directly to [B, H, T, d_head] -> [B, T, d_model]."""
        w = self.w_o.weight.view(self.d_model, self.n_heads, self.d_head)
        y = torch.einsum("bhte,mhe->btm", heads, w)
        return y if self.w_o.bias is None else y + self.w_o.bias

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        key = query if key is None else key
        value = query if value is None else value
        _check_mha_inputs(query, key, value, self.d_model)
        heads, weights = scaled_dot_product_attention(
            self._in_heads(self.w_q, query), self._in_heads(self.w_k, key), self._in_heads(self.w_v, value),
            mask=mask, is_causal=is_causal)
        return self._out_of_heads(heads), weights


def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    s_ = _scale_for(q.shape[-1], scale)
    t_q, t_k = q.shape[-2], k.shape[-2]
    lead = q.shape[:-2]
    run_max = torch.full((*lead, t_q, 1), -math.inf, dtype=q.dtype, device=q.device)
    run_sum = torch.zeros((*lead, t_q, 1), dtype=q.dtype, device=q.device)
    run_out = torch.zeros((*lead, t_q, v.shape[-1]), dtype=q.dtype, device=q.device)
    lowest = torch.finfo(q.dtype).min
    starts = range(0, min(t_k, t_q) if is_causal else t_k, block_size)
    for a in starts:
        b = min(a + block_size, t_k)
        r = a if is_causal else 0
        blk = (q[..., r:, :] @ k[..., a:b, :].mT) * s_
        if mask is not None:
            blk = blk + _as_bias(_mask_block(mask, r, a, b), blk)
        if is_causal:
            head_rows = min(b - a, t_q - r)  # rows below these see the whole block
            ii = torch.arange(r, r + head_rows, device=q.device).unsqueeze(-1)
            jj = torch.arange(a, b, device=q.device)
            blk[..., :head_rows, :].masked_fill_(jj > ii, -math.inf)
        new_max = torch.maximum(run_max[..., r:, :], blk.amax(-1, keepdim=True))
        shift = new_max.clamp(min=lowest)
        p = (blk - shift).exp()
        decay = (run_max[..., r:, :] - shift).exp()
        run_sum[..., r:, :].mul_(decay).add_(p.sum(-1, keepdim=True))
        run_out[..., r:, :].mul_(decay).add_(p @ v[..., a:b, :])
        run_max[..., r:, :] = new_max
    return run_out / torch.where(run_sum > 0, run_sum, torch.ones_like(run_sum))


class KVCache:
    def __init__(self, batch_size, n_heads, max_len, d_head, dtype=torch.float32, device=None):
        self.keys, self.values = (torch.zeros(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
                                  for _ in range(2))
        self.max_len, self.length = max_len, 0

    def append(self, k, v):
        _check_append(self, k, v)
        lo, hi = self.length, self.length + k.shape[2]
        self.keys[:, :, lo:hi], self.values[:, :, lo:hi] = k, v
        self.length = hi
        return self.keys.narrow(2, 0, hi), self.values.narrow(2, 0, hi)


def decode_step(mha, x_t, cache):
    _check_decode_step(mha, x_t, cache)
    h = cache.keys.shape[1]
    q, k, v = (split_heads(layer(x_t), h) for layer in (mha.w_q, mha.w_k, mha.w_v))
    keys, values = cache.append(k, v)
    out, _ = scaled_dot_product_attention(q, keys, values)
    return mha.w_o(merge_heads(out))

# ---------------------------------------------------------------------------------------------
# Given: input checks and helpers the tasks call. They turn bad input into a clear ValueError
# instead of a deep torch error; you need not change them.
# ---------------------------------------------------------------------------------------------

def _check_tensor(x, name, min_dim=2):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dims, got shape {tuple(x.shape)}")


def _check_qk(q, k):
    _check_tensor(q, "q")
    _check_tensor(k, "k")
    if q.dtype != k.dtype:
        raise ValueError(f"q and k must have the same dtype, got q {q.dtype} and k {k.dtype}")
    if q.size(-1) != k.size(-1):
        raise ValueError(
            f"q and k must have the same last dim (features per head), got q {tuple(q.shape)} "
            f"and k {tuple(k.shape)}"
        )


def _check_qkv(q, k, v):
    _check_qk(q, k)
    _check_tensor(v, "v")
    if v.dtype != q.dtype:
        raise ValueError(f"v must have the dtype of q and k, {q.dtype}, got v {v.dtype}")
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise ValueError(
            f"q, k and v must have the same leading (batch) dims, got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    if k.size(-2) != v.size(-2):
        raise ValueError(
            f"k and v must have the same number of positions Tk (dim -2), got k {tuple(k.shape)} "
            f"and v {tuple(v.shape)}"
        )


def _check_mask(mask, scores):
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool and mask.dtype != scores.dtype:
        raise ValueError(
            f"mask must be bool (True = allowed) or floating with the scores' dtype {scores.dtype} "
            f"(added to the scores), got {mask.dtype}"
        )
    try:
        broadcast = torch.broadcast_shapes(mask.shape, scores.shape)
    except RuntimeError:
        broadcast = None
    if broadcast != scores.shape:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
            f"{tuple(scores.shape)} ([..., Tq, Tk])"
        )


def _check_mask_for(mask, q, k):
    """_check_mask against the scores of q and k ([..., Tq, Tk], q's dtype) without computing them."""
    scores_like = q.new_empty(()).expand(*q.shape[:-1], k.size(-2))  # (..., Tq, Tk), no memory
    _check_mask(mask, scores_like)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_seq_len(seq_len):
    if not _is_int(seq_len) or seq_len < 0:
        raise ValueError(f"seq_len must be a non-negative int, got {seq_len!r}")


def _check_n_heads(d_model, n_heads):
    if not _is_int(n_heads) or n_heads <= 0:
        raise ValueError(f"n_heads must be a positive int, got {n_heads!r}")


def _check_mha_inputs(query, key, value, d_model):
    for name, x in (("query", query), ("key", key), ("value", value)):
        _check_tensor(x, name, min_dim=0)
        if x.dim() != 3 or x.size(-1) != d_model:
            raise ValueError(f"{name} must be [B, T, d_model={d_model}], got shape {tuple(x.shape)}")
    if not query.size(0) == key.size(0) == value.size(0):
        raise ValueError(
            f"query, key and value must have the same batch size B (dim 0), got query {tuple(query.shape)}, "
            f"key {tuple(key.shape)} and value {tuple(value.shape)}"
        )
    if key.size(1) != value.size(1):
        raise ValueError(
            f"key and value must have the same number of positions Tk (dim 1), got key {tuple(key.shape)} "
            f"and value {tuple(value.shape)}"
        )


HALF_DTYPES = (torch.float16, torch.bfloat16)


def _in_float32(q, k, v, mask):
    """q, k, v and a floating mask in float32, for half-precision inputs (float16 overflows past 65504)."""
    if mask is not None:
        _check_mask_for(mask, q, k)
        mask = mask if mask.dtype == torch.bool else mask.float()
    return q.float(), k.float(), v.float(), mask


def _check_tiled(query, key, value, mask, block_size):
    _check_qkv(query, key, value)
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    if mask is not None:
        _check_mask_for(mask, query, key)
    inputs = {"q": query, "k": key, "v": value, "mask": mask}
    needing_grad = [name for name, x in inputs.items() if x is not None and x.requires_grad]
    if needing_grad and torch.is_grad_enabled():
        raise ValueError(
            f"tiled_attention is inference-only (it updates its running tensors in place, which autograd "
            f"cannot differentiate), but requires_grad is set on {', '.join(needing_grad)}: call it under "
            f"torch.no_grad() or with detached tensors, and train with scaled_dot_product_attention"
        )


def _mask_block(mask, first_row, start, end):
    """The part of a mask (broadcastable to [..., Tq, Tk]) for queries first_row: and keys start:end."""
    if mask.dim() >= 1 and mask.size(-1) != 1:
        mask = mask[..., start:end]  # (..., Tq or 1, blk)
    if mask.dim() >= 2 and mask.size(-2) != 1:
        mask = mask[..., first_row:, :]  # (..., Tq - first_row, blk)
    return mask


def _check_append(cache, k, v):
    batch, n_heads, _, d_head = cache.keys.shape
    for name, x in (("k", k), ("v", v)):
        _check_tensor(x, name, min_dim=0)
        if x.dim() != 4 or (x.size(0), x.size(1), x.size(3)) != (batch, n_heads, d_head):
            raise ValueError(
                f"{name} must be [B={batch}, H={n_heads}, T_new, d_head={d_head}] to fit the cache, "
                f"got shape {tuple(x.shape)}"
            )
    if k.size(2) != v.size(2):
        raise ValueError(
            f"k and v must hold the same number of new positions T_new (dim 2), got k {tuple(k.shape)} "
            f"and v {tuple(v.shape)}"
        )
    if cache.length + k.size(2) > cache.max_len:
        raise ValueError(
            f"the cache is full: it holds {cache.max_len} positions, {cache.length} are used and "
            f"{k.size(2)} more were appended"
        )


def _check_decode_step(mha, x_t, cache):
    """Reads only mha.w_q (d_model); the number of heads H is the cache's, cache.keys.size(1)."""
    d_model = mha.w_q.in_features
    _check_tensor(x_t, "x_t", min_dim=0)
    if x_t.dim() != 3 or x_t.size(1) != 1 or x_t.size(2) != d_model:
        raise ValueError(
            f"x_t must be one new token per sequence, [B, 1, d_model={d_model}], got shape "
            f"{tuple(x_t.shape)}: decode_step takes the tokens one at a time"
        )
    batch, n_heads, _, d_head = cache.keys.shape
    if batch != x_t.size(0) or n_heads * d_head != d_model:
        raise ValueError(
            f"the cache must be [B={x_t.size(0)}, H, max_len, d_head] with H * d_head = d_model={d_model} for "
            f"x_t {tuple(x_t.shape)} and this module, got cache.keys {tuple(cache.keys.shape)}"
        )
