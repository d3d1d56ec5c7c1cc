"""Fresh correct, appended to the reference: correct: einsum scores scaled after, torch.where with full_like(-inf), isneginf().all() dead rows, combined mask for is_causal, reshape+permute heads"""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    d = q.shape[-1]
    if scale is None:
        scale = 1 / math.sqrt(d)
    return torch.einsum('...id,...jd->...ij', q, k) * scale

def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    return torch.tril(torch.ones((seq_len, seq_len), device=device)).bool()

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = torch.where(mask, scores, torch.full_like(scores, float("-inf")))
        else:
            scores = scores + mask
    dead = torch.isneginf(scores).all(dim=-1, keepdim=True)
    scores = torch.where(dead, torch.zeros_like(scores), scores)
    w = torch.softmax(scores, dim=-1)
    return torch.where(dead, torch.zeros_like(w), w)

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    if mask is not None:
        _check_mask_for(mask, q, k)
    orig = q.dtype
    if orig in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    if is_causal:
        Tq, Tk = q.shape[-2], k.shape[-2]
        causal = torch.tril(torch.ones(Tq, Tk, dtype=torch.bool, device=q.device))
        if mask is None:
            mask = causal
        elif mask.dtype == torch.bool:
            mask = mask & causal
        else:
            mask = torch.where(causal, mask, torch.full_like(mask, float("-inf")))
    scores = attention_scores(q, k, scale=scale)
    attn = attention_weights(scores, mask)
    out = torch.einsum('...ij,...jd->...id', attn, v)
    return out.to(orig), attn.to(orig)

def split_heads(x, n_heads):
    B, T, D = x.shape
    _check_n_heads(D, n_heads)
    if D % n_heads:
        raise DimensionMismatchError(f"n_heads={n_heads} does not divide d_model={D}")
    return x.reshape(B, T, n_heads, D // n_heads).permute(0, 2, 1, 3)

def merge_heads(x):
    B, H, T, Dh = x.shape
    return x.permute(0, 2, 1, 3).reshape(B, T, H * Dh)
