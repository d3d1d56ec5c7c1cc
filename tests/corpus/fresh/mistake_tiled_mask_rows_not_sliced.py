"""Fresh mistake in tiled, appended to the reference: tiled_attention: with is_causal, slices the mask for key block s:e but not for the rows first: (passes first_row=0), so [..., Tq, Tk] masks mismatch q[..., s:, :]"""

def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    in_dtype = q.dtype
    if in_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(-1))
    q = q * scale
    tq, tk = q.size(-2), k.size(-2)
    lead = q.shape[:-2]
    m = q.new_full((*lead, tq, 1), float("-inf"))
    l = q.new_zeros((*lead, tq, 1))
    acc = q.new_zeros((*lead, tq, v.size(-1)))
    for s in range(0, tk, block_size):
        e = min(s + block_size, tk)
        first = s if is_causal else 0
        if first >= tq:
            break
        qb = q[..., first:, :]
        sc = qb @ k[..., s:e, :].transpose(-2, -1)
        if mask is not None:
            mb = _mask_block(mask, 0, s, e)
            if mb.dtype == torch.bool:
                sc = sc.masked_fill(~mb, float("-inf"))
            else:
                sc = sc + mb
        if is_causal:
            rows = torch.arange(first, tq, device=q.device).unsqueeze(-1)
            cols = torch.arange(s, e, device=q.device)
            sc = sc.masked_fill(cols > rows, float("-inf"))
        m_old = m[..., first:, :]
        m_new = torch.maximum(m_old, sc.amax(dim=-1, keepdim=True))
        m_safe = m_new.masked_fill(m_new == float("-inf"), 0.0)
        p = torch.exp(sc - m_safe)
        rescale = torch.exp(m_old - m_safe)
        l[..., first:, :].mul_(rescale).add_(p.sum(dim=-1, keepdim=True))
        acc[..., first:, :].mul_(rescale).add_(p @ v[..., s:e, :])
        m[..., first:, :] = m_new
    out = acc / l.masked_fill(l == 0, 1.0)
    return out.to(in_dtype)
