"""Fresh correct, appended to the reference: correct: flatten leading dims and use torch.bmm for scores and output, reshape back"""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    *lead, Tq, d = q.shape
    Tk = k.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    q3 = q.reshape(-1, Tq, d)
    k3 = k.reshape(-1, Tk, d)
    scores = torch.bmm(q3 * scale, k3.transpose(1, 2))
    return scores.reshape(*lead, Tq, Tk)

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    in_dtype = q.dtype
    if in_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    scores = attention_scores(q, k, scale)
    if is_causal:
        tq, tk = scores.shape[-2:]
        keep = torch.ones(tq, tk, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    weights = attention_weights(scores, mask)
    *lead, tq, tk = weights.shape
    dv = v.shape[-1]
    out = torch.bmm(weights.reshape(-1, tq, tk), v.reshape(-1, tk, dv)).reshape(*lead, tq, dv)
    return out.to(in_dtype), weights.to(in_dtype)
