"""Fresh mistake in sdpa, appended to the reference: sdpa: forgets to pass `scale` on to attention_scores, so an explicit scale is ignored (always 1/sqrt(d))"""

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    in_dtype = q.dtype
    if in_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    scores = attention_scores(q, k)
    if is_causal:
        tq, tk = q.size(-2), k.size(-2)
        allowed = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = attention_weights(scores, mask)
    out = weights @ v
    return out.to(in_dtype), weights.to(in_dtype)
