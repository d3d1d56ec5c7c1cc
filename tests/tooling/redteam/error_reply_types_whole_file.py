"""RED TEAM: crafted_error_reply_kills_pytest.py

What: any of the scan bypasses gives full Python in the worker (here the storage .type() import,
see storage_type_import.py). The worker's error replies are built by Worker.describe() in the same process,
so the file replaces it with one whose "code" field is an int. The test process trusts that field:
grader.plugin.explain() calls remote['code'].strip() inside the pytest_runtest_makereport hook, which
raises AttributeError inside pytest's own hook machinery (INTERNALERROR): pytest stops, the remaining
tests report nothing, and at a sandboxed level grader.run raises GraderError DIED_UNDER_THE_GRADER
("it was killed from outside ... grade again"): exit 2, no report, blamed on the machine.
The first call that raises is attention_scores with a wrong input (every suite has such a test);
here attention_scores raises on every call to make it immediate.

Observed (grade --suite all): scan [], exit code 2, no report; the grader printed "grader error (not your
code's fault): the test process ended before it reported 21 of 103 tests, and the student's code cannot
reach it at this isolation: it was killed from outside (the out-of-memory killer of a loaded host, say);
grade again".
"""

import math

import torch
import torch.nn as nn


def _load(dotted):
    name = dotted
    try:
        torch.UntypedStorage(0).type(name)
    except AttributeError as error:
        return error.obj


_worker_class = _load("grader.sandbox.worker.Worker")
_honest_describe = _worker_class.describe


def _describe(self, error):
    reply = _honest_describe(self, error)
    reply["line"] = 1
    reply["code"] = 1
    return reply


_worker_class.describe = _describe


class DimensionMismatchError(ValueError):
    """Raised when d_model cannot be split evenly into n_heads heads."""


def attention_scores(q, k, scale=None):
    raise ValueError("any error will do")
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(-1))
    return (q * scale) @ k.transpose(-2, -1)


def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    blocked = torch.isneginf(scores).all(dim=-1, keepdim=True)
    scores = scores.masked_fill(blocked, 0.0)
    return torch.softmax(scores, dim=-1).masked_fill(blocked, 0.0)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    dtype = q.dtype
    if dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    scores = attention_scores(q, k, scale)
    if mask is not None:
        _check_mask(mask, scores)
    if is_causal:
        tq, tk = q.size(-2), k.size(-2)
        causal = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril()
        if mask is None:
            mask = causal
        elif mask.dtype == torch.bool:
            mask = mask & causal
        else:
            mask = mask.masked_fill(~causal, float("-inf"))
    weights = attention_weights(scores, mask)
    out = weights @ v
    return out.to(dtype), weights.to(dtype)


class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None, is_causal=False):
        return scaled_dot_product_attention(query, key, value, mask=mask, is_causal=is_causal)


def split_heads(x, n_heads):
    _check_n_heads(x.size(-1), n_heads)
    b, t, d = x.shape
    if d % n_heads:
        raise DimensionMismatchError(f"d_model={d} is not divisible by n_heads={n_heads}")
    return x.reshape(b, t, n_heads, d // n_heads).transpose(1, 2)


def merge_heads(x):
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        _check_n_heads(d_model, n_heads)
        if d_model % n_heads:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        key = query if key is None else key
        value = key if value is None else value
        _check_mha_inputs(query, key, value, self.d_model)
        q = split_heads(self.w_q(query), self.n_heads)
        k = split_heads(self.w_k(key), self.n_heads)
        v = split_heads(self.w_v(value), self.n_heads)
        out, weights = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
        return self.w_o(merge_heads(out)), weights


def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    dtype = q.dtype
    if dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(-1))
    tq, tk = q.size(-2), k.size(-2)
    lead = q.shape[:-2]
    m = q.new_full((*lead, tq, 1), float("-inf"))
    l = q.new_zeros((*lead, tq, 1))
    acc = q.new_zeros((*lead, tq, v.size(-1)))
    qs = q * scale
    for s in range(0, tk, block_size):
        e = min(s + block_size, tk)
        first = s if is_causal else 0
        if first >= tq:
            break
        sc = qs[..., first:, :] @ k[..., s:e, :].transpose(-2, -1)
        if mask is not None:
            mb = _mask_block(mask, first, s, e)
            if mb.dtype == torch.bool:
                sc = sc.masked_fill(~mb, float("-inf"))
            else:
                sc = sc + mb
        if is_causal:
            rows = torch.arange(first, tq, device=q.device).unsqueeze(-1)
            cols = torch.arange(s, e, device=q.device)
            sc = sc.masked_fill(cols > rows, float("-inf"))
        mo = m[..., first:, :]
        m_new = torch.maximum(mo, sc.amax(dim=-1, keepdim=True))
        safe = m_new.masked_fill(torch.isneginf(m_new), 0.0)
        p = torch.exp(sc - safe)
        corr = torch.exp(mo - safe)
        l[..., first:, :].mul_(corr).add_(p.sum(dim=-1, keepdim=True))
        acc[..., first:, :].mul_(corr).add_(p @ v[..., s:e, :])
        m[..., first:, :] = m_new
    out = torch.where(l > 0, acc / l.clamp_min(1e-30), torch.zeros_like(acc))
    return out.to(dtype)


class KVCache:
    def __init__(self, batch_size, n_heads, max_len, d_head, dtype=torch.float32, device=None):
        self.keys = torch.zeros(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
        self.values = torch.zeros(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
        self.max_len = max_len
        self.length = 0

    def append(self, k, v):
        _check_append(self, k, v)
        n = k.size(2)
        self.keys[:, :, self.length:self.length + n] = k
        self.values[:, :, self.length:self.length + n] = v
        self.length += n
        return self.keys[:, :, :self.length], self.values[:, :, :self.length]


def decode_step(mha, x_t, cache):
    _check_decode_step(mha, x_t, cache)
    h = cache.keys.size(1)
    q = split_heads(mha.w_q(x_t), h)
    k = split_heads(mha.w_k(x_t), h)
    v = split_heads(mha.w_v(x_t), h)
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
