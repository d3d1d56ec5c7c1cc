"""RED TEAM (appended to the reference, its functions replacing the reference's): crafted_error_reply_kills_pytest.py

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


