"""Fresh mistake in efficiency, appended to the reference: sdpa: loops over query chunks of 128 'to save memory' (loop over positions)"""

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    in_dtype = q.dtype
    if in_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    if mask is not None:
        _check_mask_for(mask, q, k)
    tq, tk = q.size(-2), k.size(-2)
    chunk = 128  # process queries in chunks to save memory
    outs, ws = [], []
    for s in range(0, tq, chunk):
        e = min(s + chunk, tq)
        scores = attention_scores(q[..., s:e, :], k, scale)
        if is_causal:
            allowed = torch.arange(s, e, device=q.device)[:, None] >= torch.arange(tk, device=q.device)
            scores = scores.masked_fill(~allowed, float("-inf"))
        m = None
        if mask is not None:
            m = mask if mask.dim() < 2 or mask.size(-2) == 1 else mask[..., s:e, :]
        w = attention_weights(scores, m)
        ws.append(w)
        outs.append(w @ v)
    out = torch.cat(outs, dim=-2)
    weights = torch.cat(ws, dim=-2)
    return out.to(in_dtype), weights.to(in_dtype)
