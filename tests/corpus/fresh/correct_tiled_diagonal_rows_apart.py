"""Fresh correct, appended to the reference: correct: tiled attention whose causal blocks update the rows on the block's diagonal apart from the rows past it (a closure per update)"""

NEG_INF = float("-inf")


def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    """scaled_dot_product_attention's output, computed one block of keys at a time (online softmax).

    The scores of all queries with one block of block_size keys are computed, used and dropped
    before the next block: memory grows with Tq x block_size, never with Tq x Tk. Like a
    FlashAttention forward kernel it updates its running tensors in place, so it is inference-only:
    with grad enabled, an input that requires grad is refused with a ValueError (FlashAttention
    recomputes the blocks in a backward pass of its own, which this function does not have).
    float16 and bfloat16 inputs are computed in float32, as in scaled_dot_product_attention.

    Args:
        q: [..., Tq, d]. k: [..., Tk, d]. v: [..., Tk, dv] (same leading dims for all three).
        mask: None, or bool/floating, broadcastable to [..., Tq, Tk] (see attention_weights).
        is_causal: as in scaled_dot_product_attention (top-left aligned, combined with mask).
            Key block [s, e) is invisible to queries i < s: it is multiplied with q[..., s:, :]
            only, and skipped entirely once s >= Tq.
        scale: None means 1 / sqrt(d).
        block_size: keys per block.

    Returns:
        output [..., Tq, dv], equal to scaled_dot_product_attention(q, k, v, ...)[0]; a query row
        with no allowed key gives zeros.
    """
    _check_tiled(q, k, v, mask, block_size)
    in_dtype = q.dtype
    if in_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    Tq, Tk = q.shape[-2], k.shape[-2]
    q = q * scale
    m = q.new_full((*q.shape[:-1], 1), NEG_INF)
    l = q.new_zeros((*q.shape[:-1], 1))
    acc = q.new_zeros((*q.shape[:-1], v.shape[-1]))


    def update(r0, r1, s0, s1, causal_piece):
        """Online-softmax update of query rows r0:r1 with keys s0:s1."""
        s = q[..., r0:r1, :] @ k[..., s0:s1, :].transpose(-1, -2)
        if mask is not None:
            mb = _mask_block(mask, r0, s0, s1)
            if mb.dim() >= 2 and mb.size(-2) != 1:
                mb = mb[..., : r1 - r0, :]
            s = s.masked_fill(~mb, NEG_INF) if mb.dtype == torch.bool else s + mb
        if causal_piece:
            rows = torch.arange(r0, r1, device=q.device)[:, None]
            cols = torch.arange(s0, s1, device=q.device)[None, :]
            s = s.masked_fill(cols > rows, NEG_INF)
        m_old = m[..., r0:r1, :]
        m_new = torch.maximum(m_old, s.amax(-1, keepdim=True))
        base = torch.where(torch.isneginf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - base)
        alpha = torch.exp(m_old - base)
        l[..., r0:r1, :].mul_(alpha).add_(p.sum(-1, keepdim=True))
        acc[..., r0:r1, :].mul_(alpha).add_(p @ v[..., s0:s1, :])
        m[..., r0:r1, :] = m_new


    for s0 in range(0, Tk, block_size):
        s1 = min(s0 + block_size, Tk)
        if not is_causal:
            update(0, Tq, s0, s1, False)
            continue
        if s0 >= Tq:
            break
        diag_end = min(s1, Tq)
        update(s0, diag_end, s0, s1, True)  # rows that meet the diagonal inside this block
        if diag_end < Tq:
            update(diag_end, Tq, s0, s1, False)  # rows past the block: every key visible
    out = acc / torch.where(l == 0, torch.ones_like(l), l)
    return out.to(in_dtype)
