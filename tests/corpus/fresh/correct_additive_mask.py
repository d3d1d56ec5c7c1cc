"""Fresh correct, appended to the reference: correct: bool mask converted to additive float -inf mask, causal as additive float from arange comparison, scale q.shape[-1] ** -0.5, k.mT"""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    if scale is None:
        scale = q.shape[-1] ** -0.5
    return q @ k.mT * scale

def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    idx = torch.arange(seq_len, device=device)
    return idx[:, None] >= idx[None, :]

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            additive = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
            additive = additive.masked_fill(~mask, float("-inf"))
        else:
            additive = mask
        scores = scores + additive
    row_max = scores.amax(dim=-1, keepdim=True)
    no_key = torch.isneginf(row_max)
    safe = torch.where(no_key, torch.zeros_like(scores), scores)
    weights = safe.softmax(dim=-1)
    return torch.where(no_key, torch.zeros_like(weights), weights)

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    dtype = q.dtype
    if dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    scores = attention_scores(q, k, scale)
    if is_causal:
        Tq, Tk = q.shape[-2], k.shape[-2]
        rows = torch.arange(Tq, device=q.device)[:, None]
        cols = torch.arange(Tk, device=q.device)[None, :]
        future = torch.zeros(Tq, Tk, dtype=scores.dtype, device=q.device)
        future = future.masked_fill(cols > rows, float("-inf"))
        scores = scores + future
    weights = attention_weights(scores, mask)
    output = weights @ v
    return output.to(dtype), weights.to(dtype)
