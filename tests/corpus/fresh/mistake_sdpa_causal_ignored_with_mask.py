"""Fresh mistake in sdpa, appended to the reference: sdpa: is_causal only used when no mask is given (mask replaces causal instead of combining)"""

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    in_dtype = q.dtype
    if in_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    if is_causal and mask is None:
        mask = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril()
    scores = attention_scores(q, k, scale)
    weights = attention_weights(scores, mask)
    out = weights @ v
    return out.to(in_dtype), weights.to(in_dtype)
