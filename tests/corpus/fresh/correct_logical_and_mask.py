"""Fresh correct, appended to the reference: correct: is_causal merged into the mask with logical_and (bool) / where(-inf) (float), torch.where with python scalars, has_key via amax > -inf"""

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = torch.where(mask, scores, float("-inf"))
        else:
            scores = scores + mask
    has_key = scores.amax(dim=-1, keepdim=True) > float("-inf")
    weights = torch.softmax(torch.where(has_key, scores, 0.0), dim=-1)
    return torch.where(has_key, weights, 0.0)

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    if mask is not None:
        _check_mask_for(mask, q, k)
    dtype = q.dtype
    if dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    if is_causal:
        tq, tk = q.size(-2), k.size(-2)
        allowed = torch.arange(tq, device=q.device).unsqueeze(1) >= torch.arange(tk, device=q.device)
        if mask is None:
            mask = allowed
        elif mask.dtype == torch.bool:
            mask = torch.logical_and(mask, allowed)
        else:
            mask = mask.masked_fill(~allowed, float("-inf")) if mask.dim() >= 2 and mask.shape[-2:] == (tq, tk) \
                else torch.where(allowed, mask, float("-inf"))
    weights = attention_weights(attention_scores(q, k, scale), mask)
    return (weights @ v).to(dtype), weights.to(dtype)
