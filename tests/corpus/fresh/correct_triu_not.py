"""Fresh correct, appended to the reference: correct: causal_mask as ~triu(diagonal=1), is_causal masks the triu(1) future, einsum for weights @ v"""

def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    upper = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=device), diagonal=1)
    return ~upper

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    out_dtype = q.dtype
    if out_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    scores = attention_scores(q, k, scale)
    if is_causal:
        future = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=scores.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    weights = attention_weights(scores, mask)
    output = torch.einsum('...qk,...kd->...qd', weights, v)
    return output.to(out_dtype), weights.to(out_dtype)
