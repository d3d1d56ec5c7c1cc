"""Fresh correct (round 3), a whole file appended to the reference: einsum everywhere, masks as additive 0/-inf biases."""


import math

import torch
import torch.nn as nn


class DimensionMismatchError(ValueError):
    """Raised when d_model cannot be split evenly into n_heads heads."""


NEG_INF = float("-inf")


def _as_bias(mask, dtype):
    """bool mask (True = allowed) -> additive bias; a float mask is already a bias."""
    if mask.dtype == torch.bool:
        zero = torch.zeros((), dtype=dtype, device=mask.device)
        blocked = torch.full((), NEG_INF, dtype=dtype, device=mask.device)
        return torch.where(mask, zero, blocked)
    return mask


def _causal_bias(tq, tk, dtype, device):
    i = torch.arange(tq, device=device).unsqueeze(1)
    j = torch.arange(tk, device=device).unsqueeze(0)
    zero = torch.zeros((), dtype=dtype, device=device)
    return torch.where(j <= i, zero, torch.full((), NEG_INF, dtype=dtype, device=device))


# Task 1 (scores)

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    if scale is None:
        scale = q.shape[-1] ** -0.5
    return torch.einsum("...id,...jd->...ij", q, k) * scale


# Task 2 (causal_mask)

def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    pos = torch.arange(seq_len, device=device)
    return pos[:, None] >= pos[None, :]


# Task 3 (softmax_weights)

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        scores = scores + _as_bias(mask, scores.dtype)
    # rows where nothing is allowed: softmax of all -inf would be nan
    empty_row = torch.isneginf(scores).all(dim=-1, keepdim=True)
    scores = scores.masked_fill(empty_row, 0.0)
    weights = torch.softmax(scores, dim=-1)
    return weights.masked_fill(empty_row, 0.0)


# Task 4 (sdpa)

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    orig_dtype = q.dtype
    if orig_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    if mask is not None:
        _check_mask_for(mask, q, k)
    s = attention_scores(q, k, scale)
    if is_causal:
        s = s + _causal_bias(q.shape[-2], k.shape[-2], s.dtype, s.device)
    a = attention_weights(s, mask)
    o = torch.einsum("...ij,...jd->...id", a, v)
    return o.to(orig_dtype), a.to(orig_dtype)


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None, is_causal=False):
        return scaled_dot_product_attention(query, key, value, mask, is_causal)


# Task 5 (heads)

def split_heads(x, n_heads):
    d_model = x.shape[-1]
    _check_n_heads(d_model, n_heads)
    if d_model % n_heads:
        raise DimensionMismatchError(
            f"cannot split d_model {d_model} into {n_heads} heads: {n_heads} does not divide {d_model}"
        )
    b, t, _ = x.shape
    return torch.einsum("bthd->bhtd", x.reshape(b, t, n_heads, d_model // n_heads))


def merge_heads(x):
    b, h, t, dh = x.shape
    return torch.einsum("bhtd->bthd", x).reshape(b, t, h * dh)


# Tasks 6 and 7 (divisibility, mha)

def _linear(x, layer):
    y = torch.einsum("btd,ed->bte", x, layer.weight)
    if layer.bias is not None:
        y = y + layer.bias
    return y


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        _check_n_heads(d_model, n_heads)
        if d_model % n_heads:
            raise DimensionMismatchError(
                f"cannot split d_model {d_model} into {n_heads} heads: {n_heads} does not divide {d_model}"
            )
        self.h = n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        key = query if key is None else key
        value = key if value is None else value
        _check_mha_inputs(query, key, value, self.w_q.in_features)
        qh = split_heads(_linear(query, self.w_q), self.h)
        kh = split_heads(_linear(key, self.w_k), self.h)
        vh = split_heads(_linear(value, self.w_v), self.h)
        oh, attn = scaled_dot_product_attention(qh, kh, vh, mask=mask, is_causal=is_causal)
        return _linear(merge_heads(oh), self.w_o), attn


# Bonus task `tiled`

def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    orig_dtype = q.dtype
    if orig_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    if scale is None:
        scale = q.shape[-1] ** -0.5
    tq, tk = q.shape[-2], k.shape[-2]
    lead = q.shape[:-2]
    run_max = torch.full((*lead, tq, 1), NEG_INF, dtype=q.dtype, device=q.device)
    run_sum = torch.zeros((*lead, tq, 1), dtype=q.dtype, device=q.device)
    run_out = torch.zeros((*lead, tq, v.shape[-1]), dtype=q.dtype, device=q.device)

    start = 0
    while start < tk:
        stop = min(start + block_size, tk)
        r0 = start if is_causal else 0
        if r0 >= tq:
            break
        s = torch.einsum("...id,...jd->...ij", q[..., r0:, :], k[..., start:stop, :]) * scale
        if mask is not None:
            s = s + _as_bias(_mask_block(mask, r0, start, stop), s.dtype)
        if is_causal:
            # absolute query r0 + i sees absolute key start + j iff j <= i (r0 == start)
            s = s + _causal_bias(tq - r0, stop - start, s.dtype, s.device)
        old_max = run_max[..., r0:, :]
        new_max = torch.maximum(old_max, s.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(torch.isneginf(new_max), 0.0)
        p = torch.exp(s - shift)
        corr = torch.exp(old_max - shift)
        run_sum[..., r0:, :] = corr * run_sum[..., r0:, :] + p.sum(dim=-1, keepdim=True)
        run_out[..., r0:, :] = corr * run_out[..., r0:, :] + torch.einsum("...ij,...jd->...id", p, v[..., start:stop, :])
        run_max[..., r0:, :] = new_max
        start = stop

    denom = torch.where(run_sum > 0, run_sum, torch.ones_like(run_sum))
    return (run_out / denom).to(orig_dtype)


# Bonus task `kv_cache`

class KVCache:
    def __init__(self, batch_size, n_heads, max_len, d_head, dtype=torch.float32, device=None):
        self.keys = torch.zeros(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
        self.values = torch.zeros_like(self.keys)
        self.max_len = max_len
        self.length = 0

    def append(self, k, v):
        _check_append(self, k, v)
        n = k.shape[2]
        self.keys[:, :, self.length:self.length + n] = k
        self.values[:, :, self.length:self.length + n] = v
        self.length += n
        return self.keys[:, :, :self.length], self.values[:, :, :self.length]


def decode_step(mha, x_t, cache):
    _check_decode_step(mha, x_t, cache)
    h = cache.keys.shape[1]
    q = split_heads(_linear(x_t, mha.w_q), h)
    k = split_heads(_linear(x_t, mha.w_k), h)
    v = split_heads(_linear(x_t, mha.w_v), h)
    keys, values = cache.append(k, v)
    out, _ = scaled_dot_product_attention(q, keys, values)
    return _linear(merge_heads(out), mha.w_o)


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
