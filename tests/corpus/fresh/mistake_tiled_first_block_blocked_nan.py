"""Fresh mistake in tiled, appended to the reference: tiled_attention subtracts m_new even where it is still -inf
Verdict on 2 Dec: SILENT (full public marks: no public first key block entirely blocked); now caught publicly."""

def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    scale = 1.0 / math.sqrt(max(q.size(-1), 1)) if scale is None else scale
    q = q * scale
    row_max = q.new_full((*q.shape[:-1], 1), float("-inf"))
    row_sum = q.new_zeros((*q.shape[:-1], 1))
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))
    q_len = q.size(-2)
    for start in range(0, k.size(-2), block_size):
        end = min(start + block_size, k.size(-2))
        scores = q @ k[..., start:end, :].transpose(-2, -1)
        if mask is not None:
            piece = _mask_block(mask, 0, start, end)
            scores = scores.masked_fill(~piece, float("-inf")) if piece.dtype == torch.bool else scores + piece
        if is_causal:
            rows = torch.arange(q_len, device=q.device).unsqueeze(-1)
            cols = torch.arange(start, end, device=q.device)
            scores = scores.masked_fill(cols > rows, float("-inf"))
        new_max = torch.maximum(row_max, scores.amax(-1, keepdim=True))
        rescale = torch.exp(row_max - new_max).nan_to_num(0.0)
        probs = torch.exp(scores - new_max)
        row_sum = row_sum * rescale + probs.sum(-1, keepdim=True)
        acc = acc * rescale + probs @ v[..., start:end, :]
        row_max = new_max
    return acc / row_sum.masked_fill(row_sum == 0, 1.0)
