"""The oracle: what a correct implementation returns, computed with torch's own kernels in the test process
(not the reference, solutions/attention.py, which is graded like any submission)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOLERANCES = {
    torch.float64: dict(atol=1e-10, rtol=1e-8),
    torch.float32: dict(atol=1e-4, rtol=1e-4),
    torch.bfloat16: dict(atol=1e-1, rtol=5e-2),
    torch.float16: dict(atol=2e-2, rtol=1e-2),
}


def combined_mask(mask, q_len, k_len, is_causal):
    """Our API's `mask` and `is_causal` as one mask for torch (both apply)."""
    if not is_causal:
        return mask
    causal = torch.ones(q_len, k_len, dtype=torch.bool).tril()
    if mask is None:
        return causal
    if mask.dtype == torch.bool:
        return mask & causal
    return mask.masked_fill(~causal, float("-inf"))


def output(q, k, v, mask=None, is_causal=False, scale=None):
    """The output alone, as torch computes it (sdpa's weights cost a product with a [Tk, Tk] identity)."""
    attn_mask = combined_mask(mask, q.size(-2), k.size(-2), is_causal)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=scale)


def sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    """(output, weights) as torch computes them; weights are SDPA applied to V = identity."""
    attn_mask = combined_mask(mask, q.size(-2), k.size(-2), is_causal)
    out = output(q, k, v, mask, is_causal, scale)
    eye = torch.eye(k.size(-2), dtype=q.dtype).expand(*k.shape[:-1], k.size(-2))
    weights = F.scaled_dot_product_attention(q, k, eye, attn_mask=attn_mask, scale=scale)
    return out, weights


def scores(q, k, scale=None):
    scale = q.size(-1) ** -0.5 if scale is None else scale
    return (q.double() @ k.double().transpose(-2, -1) * scale).to(q.dtype)


def softmax_weights(scores, mask=None):
    """torch's masked softmax: SDPA with identity keys and values and scale 1 returns softmax(scores + mask),
    with zero rows where every key is blocked."""
    eye = torch.eye(scores.size(-1), dtype=scores.dtype).expand(*scores.shape[:-2], scores.size(-1), scores.size(-1))
    return F.scaled_dot_product_attention(scores, eye, eye, attn_mask=mask, scale=1.0)


def random_mha_params(d_model, bias=True, dtype=torch.float32, seed=0):
    """Seeded weights for w_q, w_k, w_v, w_o, biases random too (torch starts them at zero)."""
    g = torch.Generator().manual_seed(1000 + seed)
    bound = d_model ** -0.5
    params = {}
    for name in ("w_q", "w_k", "w_v", "w_o"):
        params[f"{name}.weight"] = (torch.rand(d_model, d_model, generator=g, dtype=dtype) * 2 - 1) * bound
        if bias:
            params[f"{name}.bias"] = (torch.rand(d_model, generator=g, dtype=dtype) * 2 - 1) * bound
    return params


def torch_mha(params, d_model, n_heads, bias=True, dtype=torch.float32):
    """nn.MultiheadAttention holding the same weights as our MultiHeadAttention."""
    mha = nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True, dtype=dtype)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([params[f"w_{n}.weight"] for n in "qkv"]))
        mha.out_proj.weight.copy_(params["w_o.weight"])
        if bias:
            mha.in_proj_bias.copy_(torch.cat([params[f"w_{n}.bias"] for n in "qkv"]))
            mha.out_proj.bias.copy_(params["w_o.bias"])
    return mha.eval()


def mha(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, bias=True):
    """(output, per-head weights) from nn.MultiheadAttention. Our bool mask (True = allowed) is
    inverted for torch (True = blocked); masks must be [Tq, Tk] or [B, 1, 1, Tk]."""
    if key is None:
        key = query
    if value is None:
        value = key
    batch, q_len, d_model = query.shape
    k_len = key.size(1)
    mask = combined_mask(mask, q_len, k_len, is_causal)
    kwargs = {}
    if mask is not None:
        if mask.dim() == 4:  # [B, 1, 1, Tk] padding mask -> key_padding_mask [B, Tk]
            kwargs["key_padding_mask"] = ~mask[:, 0, 0, :] if mask.dtype == torch.bool else mask[:, 0, 0, :]
        else:
            kwargs["attn_mask"] = ~mask if mask.dtype == torch.bool else mask
    module = torch_mha(params, d_model, n_heads, bias=bias, dtype=query.dtype)
    with torch.no_grad():
        return module(query, key, value, need_weights=True, average_attn_weights=False, **kwargs)


def mha_via_sdpa(params, n_heads, query, key=None, value=None, mask=None, is_causal=False):
    """The same maths built on torch's SDPA: defined for fully masked rows (zeros, not NaN)."""
    if key is None:
        key = query
    if value is None:
        value = key

    def project(x, name):
        y = F.linear(x, params[f"{name}.weight"], params.get(f"{name}.bias"))
        return split_heads(y, n_heads)

    q, k, v = project(query, "w_q"), project(key, "w_k"), project(value, "w_v")
    heads, weights = sdpa(q, k, v, mask=mask, is_causal=is_causal)
    merged = merge_heads(heads)
    return F.linear(merged, params["w_o.weight"], params.get("w_o.bias")), weights


def split_heads(x, n_heads):
    """[B, T, d_model] -> [B, H, T, d_head], head by head: head h holds features h*d_head:(h+1)*d_head."""
    d_head = x.size(-1) // n_heads
    return torch.stack([x[..., h * d_head:(h + 1) * d_head] for h in range(n_heads)], dim=-3)


def merge_heads(x):
    """[B, H, T, d_head] -> [B, T, H * d_head], head by head: merged[b, t, h*d_head + e] = x[b, h, t, e]."""
    return torch.cat([x[..., h, :, :] for h in range(x.size(-3))], dim=-1)
