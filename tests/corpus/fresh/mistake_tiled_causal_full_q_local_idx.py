"""Fresh mistake in tiled, appended to the reference: tiled_attention: causal uses all queries for every block (no q[..., s:] skipping) and compares block-local column indices (0..blk) with absolute query rows, so later key blocks leak into early queries"""

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
        sc = q @ k[..., s:e, :].transpose(-2, -1)
        if mask is not None:
            mb = _mask_block(mask, 0, s, e)
            if mb.dtype == torch.bool:
                sc = sc.masked_fill(~mb, float("-inf"))
            else:
                sc = sc + mb
        if is_causal:
            rows = torch.arange(tq, device=q.device).unsqueeze(-1)
            cols = torch.arange(e - s, device=q.device)
            sc = sc.masked_fill(cols > rows, float("-inf"))
        m_new = torch.maximum(m, sc.amax(dim=-1, keepdim=True))
        m_safe = m_new.masked_fill(m_new == float("-inf"), 0.0)
        p = torch.exp(sc - m_safe)
        rescale = torch.exp(m - m_safe)
        l.mul_(rescale).add_(p.sum(dim=-1, keepdim=True))
        acc.mul_(rescale).add_(p @ v[..., s:e, :])
        m = m_new
    out = acc / l.masked_fill(l == 0, 1.0)
    return out.to(in_dtype)
