"""Fresh mistake in sdpa, appended to the reference: a whole file (the einsum style) whose bool mask and is_causal are combined with OR instead of AND
Written by a helper who read only the handout, the stubs and the public tests."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class DimensionMismatchError(ValueError):
    """Raised when d_model cannot be split evenly into n_heads heads."""


NEG_INF = float("-inf")


def _default_scale(d, scale):
    return 1.0 / math.sqrt(d) if scale is None else scale


def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    return torch.einsum("...id,...jd->...ij", q, k) * _default_scale(q.size(-1), scale)


def _lower_triangle(rows, cols, device=None, row_offset=0, col_offset=0):
    """bool [rows, cols]: True where col index <= row index (absolute positions)."""
    r = torch.arange(row_offset, row_offset + rows, device=device)
    c = torch.arange(col_offset, col_offset + cols, device=device)
    return c.unsqueeze(0) <= r.unsqueeze(1)


def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    return _lower_triangle(seq_len, seq_len, device=device)


def _apply_mask(scores, mask):
    if mask is None:
        return scores
    if mask.dtype == torch.bool:
        return scores.masked_fill(mask.logical_not(), NEG_INF)
    return scores + mask


def _hand_softmax(z):
    top = z.detach().amax(dim=-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = torch.exp(z - top)
    denom = e.sum(dim=-1, keepdim=True)
    return e / torch.where(denom > 0, denom, torch.ones_like(denom))


def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
    return _hand_softmax(_apply_mask(scores, mask))


def _merge_causal(mask, q_len, k_len, device):
    causal = _lower_triangle(q_len, k_len, device=device)
    if mask is None:
        return causal
    if mask.dtype == torch.bool:
        return mask | causal
    return torch.where(causal, mask, torch.full((), NEG_INF, dtype=mask.dtype, device=mask.device))


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    if mask is not None:
        _check_mask_for(mask, q, k)
    scores = attention_scores(q, k, scale)
    if is_causal:
        mask = _merge_causal(mask, q.size(-2), k.size(-2), q.device)
    weights = attention_weights(scores, mask)
    return torch.einsum("...ij,...jc->...ic", weights, v), weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None, is_causal=False):
        return scaled_dot_product_attention(query, key, value, mask=mask, is_causal=is_causal)


def _require_divisible(d_model, n_heads):
    if d_model % n_heads != 0:
        raise DimensionMismatchError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}")


def split_heads(x, n_heads):
    d_model = x.size(-1)
    _check_n_heads(d_model, n_heads)
    _require_divisible(d_model, n_heads)
    b, t, _ = x.shape
    return x.reshape(b, t, n_heads, d_model // n_heads).permute(0, 2, 1, 3)


def merge_heads(x):
    b, h, t, e = x.shape
    return x.permute(0, 2, 1, 3).reshape(b, t, h * e)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        _check_n_heads(d_model, n_heads)
        _require_divisible(d_model, n_heads)
        self.d_model, self.n_heads = d_model, n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def _fused_qkv(self, x):
        """One matmul for q, k and v (self-attention)."""
        weight = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight], dim=0)
        bias = None
        if self.w_q.bias is not None:
            bias = torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias], dim=0)
        return F.linear(x, weight, bias).chunk(3, dim=-1)

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        key = query if key is None else key
        value = key if value is None else value
        _check_mha_inputs(query, key, value, self.d_model)
        if key is query and value is query:
            q, k, v = self._fused_qkv(query)
        else:
            q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)
        heads = [split_heads(t, self.n_heads) for t in (q, k, v)]
        out, weights = scaled_dot_product_attention(*heads, mask=mask, is_causal=is_causal)
        return self.w_o(merge_heads(out)), weights


def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    q_len, k_len = q.size(-2), k.size(-2)
    s_scale = _default_scale(q.size(-1), scale)
    lead = q.shape[:-2]
    m = q.new_full((*lead, q_len, 1), NEG_INF)
    l = q.new_zeros((*lead, q_len, 1))
    acc = q.new_zeros((*lead, q_len, v.size(-1)))
    for s in range(0, k_len, block_size):
        if is_causal and s >= q_len:
            break
        e = min(s + block_size, k_len)
        r0 = s if is_causal else 0
        sc = torch.einsum("...id,...jd->...ij", q[..., r0:, :], k[..., s:e, :]) * s_scale
        if mask is not None:
            sc = _apply_mask(sc, _mask_block(mask, r0, s, e))
        if is_causal:
            # only the first (e - s) rows of this slice can have keys in their future
            n = min(e - s, q_len - r0)
            piece = _lower_triangle(n, e - s, device=q.device, row_offset=s, col_offset=s)
            sc[..., :n, :] = sc[..., :n, :].masked_fill(~piece, NEG_INF)
        m_old = m[..., r0:, :]
        m_new = torch.maximum(m_old, sc.amax(dim=-1, keepdim=True))
        m_safe = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
        p = torch.exp(sc - m_safe)
        alpha = torch.exp(m_old - m_safe)
        l[..., r0:, :].mul_(alpha).add_(p.sum(dim=-1, keepdim=True))
        acc[..., r0:, :].mul_(alpha).add_(torch.einsum("...ij,...jc->...ic", p, v[..., s:e, :]))
        m[..., r0:, :] = m_new
    return acc / torch.where(l > 0, l, torch.ones_like(l))


class KVCache:
    def __init__(self, batch_size, n_heads, max_len, d_head, dtype=torch.float32, device=None):
        shape = (batch_size, n_heads, max_len, d_head)
        self.keys = torch.zeros(shape, dtype=dtype, device=device)
        self.values = torch.zeros(shape, dtype=dtype, device=device)
        self.max_len = max_len
        self.length = 0

    def append(self, k, v):
        _check_append(self, k, v)
        start, stop = self.length, self.length + k.size(2)
        self.keys[:, :, start:stop] = k
        self.values[:, :, start:stop] = v
        self.length = stop
        return self.keys[:, :, :stop], self.values[:, :, :stop]


def decode_step(mha, x_t, cache):
    _check_decode_step(mha, x_t, cache)
    n_heads = cache.keys.size(1)
    q, k, v = (split_heads(lin(x_t), n_heads) for lin in (mha.w_q, mha.w_k, mha.w_v))
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
