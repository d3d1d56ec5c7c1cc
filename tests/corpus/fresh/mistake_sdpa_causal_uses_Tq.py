"""Fresh mistake in sdpa, appended to the reference: sdpa: is_causal uses causal_mask(Tq), a square [Tq, Tq] mask, which breaks (shape error) when Tq != Tk"""

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    in_dtype = q.dtype
    if in_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    scores = attention_scores(q, k, scale)
    if is_causal:
        allowed = causal_mask(q.size(-2), device=q.device)
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = attention_weights(scores, mask)
    out = weights @ v
    return out.to(in_dtype), weights.to(in_dtype)
