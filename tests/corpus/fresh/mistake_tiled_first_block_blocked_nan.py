"""Fresh mistake in tiled, appended to the reference: tiled_attention subtracts m_new even where it is still -inf
Verdict on 2 Dec: SILENT (full public marks: no public first key block entirely blocked); now caught publicly."""

def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    if q.dtype in HALF_DTYPES:
        return tiled_attention(*_in_float32(q, k, v, mask), is_causal, scale, block_size).to(q.dtype)
    q_len, k_len = q.size(-2), k.size(-2)
    if scale is None:
        scale = 1.0 / math.sqrt(max(q.size(-1), 1))  # d = 0: every score is an empty sum, 0
    q = q * scale  # (..., Tq, d): scaling the queries once scales every score
    row_max = q.new_full((*q.shape[:-1], 1), float("-inf"))  # (..., Tq, 1) m, largest score so far
    row_sum = q.new_zeros((*q.shape[:-1], 1))  # (..., Tq, 1) l, sum of exp(score - m)
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))  # (..., Tq, dv) sum of exp(score - m) * v
    for start in range(0, k_len, block_size):
        end = min(start + block_size, k_len)
        first = min(start, q_len) if is_causal else 0  # queries i < start cannot see keys >= start
        if first == q_len:
            break  # this block and every later one lie above the diagonal
        scores = q[..., first:, :] @ k[..., start:end, :].transpose(-2, -1)  # (..., Tq', blk)
        if mask is not None:
            block_mask = _mask_block(mask, first, start, end)  # broadcasts to (..., Tq', blk)
            if block_mask.dtype == torch.bool:
                scores.masked_fill_(~block_mask, float("-inf"))  # (..., Tq', blk), in place
            else:
                scores.add_(block_mask)  # (..., Tq', blk), in place
        if is_causal:  # only rows i < end - 1 can have keys j > i in this block: the diagonal piece
            rows = torch.arange(first, min(end, q_len), device=q.device).unsqueeze(-1)  # (n, 1)
            cols = torch.arange(start, end, device=q.device)  # (blk,)
            scores[..., : rows.size(0), :].masked_fill_(cols > rows, float("-inf"))  # (..., n, blk)
        old_max = row_max[..., first:, :]  # (..., Tq', 1), a view: the rows this block updates
        new_max = torch.maximum(old_max, scores.amax(dim=-1, keepdim=True))  # (..., Tq', 1)
        shift = new_max  # (..., Tq', 1)
        rescale = torch.exp(old_max - shift)  # (..., Tq', 1), exp(m - m_new) <= 1
        probs = scores.sub_(shift).exp_()  # (..., Tq', blk), in place; 0.0 where blocked
        row_sum[..., first:, :].mul_(rescale).add_(probs.sum(dim=-1, keepdim=True))  # (..., Tq', 1)
        acc[..., first:, :].mul_(rescale).add_(probs @ v[..., start:end, :])  # (..., Tq', dv)
        old_max.copy_(new_max)  # (..., Tq', 1): row_max now holds m_new
    return acc / row_sum.masked_fill(row_sum == 0, 1.0)  # (..., Tq, dv); no allowed key -> acc is 0
