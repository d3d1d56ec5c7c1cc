"""Fresh correct, appended to the reference: a whole file in another style: a masking helper class (triu(1) inverted), blocked rows made safe before softmax, half precision computed in float32, an online-softmax class for the tiled bonus
Written by a helper who read only the handout, the stubs and the public tests."""

import math

import torch
import torch.nn as nn


class DimensionMismatchError(ValueError):
    """Raised when d_model cannot be split evenly into n_heads heads."""


class _Masking:
    """Small namespace of mask utilities."""

    @staticmethod
    def future(q_len, k_len, device=None):
        """True where key j is in the future of query i (j > i), top-left aligned."""
        return torch.ones(q_len, k_len, dtype=torch.bool, device=device).triu(diagonal=1)

    @staticmethod
    def to_additive(mask, dtype):
        if mask.dtype == torch.bool:
            zero = torch.zeros((), dtype=dtype, device=mask.device)
            ninf = torch.full((), float("-inf"), dtype=dtype, device=mask.device)
            return torch.where(mask, zero, ninf)
        return mask

    @classmethod
    def with_causal(cls, mask, q_len, k_len, device):
        allowed = ~cls.future(q_len, k_len, device)
        if mask is None:
            return allowed
        if mask.dtype == torch.bool:
            return torch.logical_and(mask, allowed)
        return mask.masked_fill(~allowed, float("-inf"))


def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    if scale is None:
        scale = 1 / math.sqrt(q.shape[-1])
    return torch.matmul(q, k.transpose(-1, -2)).mul(scale)


def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    return _Masking.future(seq_len, seq_len, device).logical_not()


def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    live = (scores != float("-inf")).any(dim=-1, keepdim=True)
    safe = scores.masked_fill(~live, 0.0)
    return torch.softmax(safe, dim=-1).masked_fill(~live, 0.0)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    if q.dtype in HALF_DTYPES:
        dtype = q.dtype
        q32, k32, v32, m32 = _in_float32(q, k, v, mask)
        out, w = scaled_dot_product_attention(q32, k32, v32, m32, is_causal, scale)
        return out.to(dtype), w.to(dtype)
    if mask is not None:
        _check_mask_for(mask, q, k)
    if is_causal:
        mask = _Masking.with_causal(mask, q.shape[-2], k.shape[-2], q.device)
    weights = attention_weights(attention_scores(q, k, scale=scale), mask)
    return weights @ v, weights


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None, is_causal=False):
        return scaled_dot_product_attention(query, key, value, mask, is_causal)


def _heads_or_raise(d_model, n_heads):
    _check_n_heads(d_model, n_heads)
    d_head, rest = divmod(d_model, n_heads)
    if rest:
        raise DimensionMismatchError(
            f"cannot split d_model {d_model} into {n_heads} heads (n_heads must divide d_model)")
    return d_head


def split_heads(x, n_heads):
    d_head = _heads_or_raise(x.shape[-1], n_heads)
    return x.unflatten(-1, (n_heads, d_head)).transpose(1, 2)


def merge_heads(x):
    return x.transpose(1, 2).contiguous().view(x.shape[0], x.shape[2], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        self.d_head = _heads_or_raise(d_model, n_heads)
        self.d_model = d_model
        self.n_heads = n_heads
        for name in ("w_q", "w_k", "w_v", "w_o"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=bias))

    def project(self, layer, x):
        return split_heads(layer(x), self.n_heads)

    def combine(self, heads):
        return self.w_o(merge_heads(heads))

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        if key is None:
            key = query
        if value is None:
            value = key
        _check_mha_inputs(query, key, value, self.d_model)
        q = self.project(self.w_q, query)
        k = self.project(self.w_k, key)
        v = self.project(self.w_v, value)
        heads, weights = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
        return self.combine(heads), weights


class _OnlineSoftmax:
    """Running max / denominator / accumulator for tiled attention."""

    def __init__(self, lead, q_len, dv, dtype, device):
        self.m = torch.full((*lead, q_len, 1), float("-inf"), dtype=dtype, device=device)
        self.l = torch.zeros((*lead, q_len, 1), dtype=dtype, device=device)
        self.acc = torch.zeros((*lead, q_len, dv), dtype=dtype, device=device)

    def update(self, row0, scores, v_block):
        m_old = self.m[..., row0:, :]
        m_new = torch.maximum(m_old, scores.amax(-1, keepdim=True))
        shift = m_new.masked_fill(m_new == float("-inf"), 0.0)
        p = (scores - shift).exp()
        decay = (m_old - shift).exp()
        self.l[..., row0:, :].mul_(decay).add_(p.sum(-1, keepdim=True))
        self.acc[..., row0:, :].mul_(decay).add_(p @ v_block)
        self.m[..., row0:, :] = m_new

    def result(self):
        return self.acc / self.l.masked_fill(self.l == 0, 1.0)


def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    if q.dtype in HALF_DTYPES:
        dtype = q.dtype
        q32, k32, v32, m32 = _in_float32(q, k, v, mask)
        return tiled_attention(q32, k32, v32, m32, is_causal, scale, block_size).to(dtype)
    if scale is None:
        scale = 1 / math.sqrt(q.shape[-1])
    q_len, k_len = q.shape[-2], k.shape[-2]
    state = _OnlineSoftmax(q.shape[:-2], q_len, v.shape[-1], q.dtype, q.device)
    for start in range(0, k_len, block_size):
        if is_causal and start >= q_len:
            break
        end = min(start + block_size, k_len)
        row0 = start if is_causal else 0
        scores = (q[..., row0:, :] @ k[..., start:end, :].transpose(-1, -2)) * scale
        if mask is not None:
            scores = scores + _Masking.to_additive(_mask_block(mask, row0, start, end), scores.dtype)
        if is_causal:
            rows = torch.arange(row0, q_len, device=q.device).unsqueeze(-1)
            cols = torch.arange(start, end, device=q.device)
            scores = scores.masked_fill(cols > rows, float("-inf"))
        state.update(row0, scores, v[..., start:end, :])
    return state.result()


class KVCache:
    def __init__(self, batch_size, n_heads, max_len, d_head, dtype=torch.float32, device=None):
        self.max_len = max_len
        self.length = 0
        self.keys = torch.zeros(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
        self.values = torch.zeros_like(self.keys)

    def filled(self):
        return self.keys[:, :, : self.length], self.values[:, :, : self.length]

    def append(self, k, v):
        _check_append(self, k, v)
        n = k.shape[2]
        self.keys[:, :, self.length : self.length + n].copy_(k)
        self.values[:, :, self.length : self.length + n].copy_(v)
        self.length += n
        return self.filled()


def decode_step(mha, x_t, cache):
    _check_decode_step(mha, x_t, cache)
    heads = cache.keys.shape[1]
    q = split_heads(mha.w_q(x_t), heads)
    keys, values = cache.append(split_heads(mha.w_k(x_t), heads), split_heads(mha.w_v(x_t), heads))
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
