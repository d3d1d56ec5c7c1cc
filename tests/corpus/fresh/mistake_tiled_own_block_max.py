"""Fresh mistake in tiled, appended to the reference: tiled_attention shifts each block by its own max only
Verdict on 2 Dec: SILENT (full public marks: no public scores in the hundreds); now caught publicly."""

def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    scale = 1.0 / math.sqrt(max(q.size(-1), 1)) if scale is None else scale
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))
    total = q.new_zeros((*q.shape[:-1], 1))
    q_len = q.size(-2)
    for start in range(0, k.size(-2), block_size):
        end = min(start + block_size, k.size(-2))
        scores = (q * scale) @ k[..., start:end, :].transpose(-2, -1)
        if mask is not None:
            piece = _mask_block(mask, 0, start, end)
            scores = scores.masked_fill(~piece, float("-inf")) if piece.dtype == torch.bool else scores + piece
        if is_causal:
            rows = torch.arange(q_len, device=q.device).unsqueeze(-1)
            cols = torch.arange(start, end, device=q.device)
            scores = scores.masked_fill(cols > rows, float("-inf"))
        probs = scores.exp()
        total = total + probs.sum(-1, keepdim=True)
        acc = acc + probs @ v[..., start:end, :]
    return acc / total.masked_fill(total == 0, 1.0)
