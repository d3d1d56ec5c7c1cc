"""Fresh correct, appended to the reference: correct: bonus alternative - tiled with while-loop, out-of-place slice writes, triu causal piece on the block's first rows, where(l>0); KVCache with narrow().copy_(); decode_step with inline view/transpose"""

import torch.nn.functional as F

def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    out_dtype = q.dtype
    if out_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    Tq, d = q.shape[-2], q.shape[-1]
    Tk = k.shape[-2]
    if scale is None:
        scale = d ** -0.5
    qs = q * scale
    run_max = torch.full((*q.shape[:-1], 1), -math.inf, dtype=q.dtype, device=q.device)
    run_sum = torch.zeros_like(run_max)
    acc = torch.zeros((*q.shape[:-1], v.shape[-1]), dtype=q.dtype, device=q.device)
    start = 0
    while start < Tk:
        end = min(start + block_size, Tk)
        r0 = start if is_causal else 0
        if r0 >= Tq:
            break
        s_blk = torch.matmul(qs[..., r0:, :], k[..., start:end, :].transpose(-1, -2))
        if mask is not None:
            mb = _mask_block(mask, r0, start, end)
            s_blk = s_blk + mb if mb.is_floating_point() else s_blk.masked_fill(~mb, -math.inf)
        if is_causal:
            # rows are queries r0.., cols are keys start..; in local terms both start at the same offset
            n_rows = min(end - start, Tq - r0)
            local = torch.ones(n_rows, end - start, dtype=torch.bool, device=q.device).triu(1)
            s_blk[..., :n_rows, :] = s_blk[..., :n_rows, :].masked_fill(local, -math.inf)
        old_max = run_max[..., r0:, :]
        new_max = torch.maximum(old_max, s_blk.amax(-1, keepdim=True))
        shift = torch.where(torch.isneginf(new_max), torch.zeros_like(new_max), new_max)
        p = torch.exp(s_blk - shift)
        alpha = torch.exp(old_max - shift)
        run_sum[..., r0:, :] = alpha * run_sum[..., r0:, :] + p.sum(-1, keepdim=True)
        acc[..., r0:, :] = alpha * acc[..., r0:, :] + p @ v[..., start:end, :]
        run_max[..., r0:, :] = new_max
        start = end
    out = torch.where(run_sum > 0, acc / run_sum.clamp_min(torch.finfo(run_sum.dtype).tiny), torch.zeros_like(acc))
    return out.to(out_dtype)

class KVCache:
    def __init__(self, batch_size, n_heads, max_len, d_head, dtype=torch.float32, device=None):
        shape = (batch_size, n_heads, max_len, d_head)
        self.keys = torch.zeros(shape, dtype=dtype, device=device)
        self.values = torch.zeros(shape, dtype=dtype, device=device)
        self.max_len = max_len
        self.length = 0

    def append(self, k, v):
        _check_append(self, k, v)
        n = k.shape[2]
        self.keys.narrow(2, self.length, n).copy_(k)
        self.values.narrow(2, self.length, n).copy_(v)
        self.length += n
        return self.keys.narrow(2, 0, self.length), self.values.narrow(2, 0, self.length)

def decode_step(mha, x_t, cache):
    _check_decode_step(mha, x_t, cache)
    B = x_t.shape[0]
    H, d_head = cache.keys.shape[1], cache.keys.shape[3]
    def heads(lin):
        return F.linear(x_t, lin.weight, lin.bias).view(B, 1, H, d_head).transpose(1, 2)
    q, k, v = heads(mha.w_q), heads(mha.w_k), heads(mha.w_v)
    keys, values = cache.append(k, v)
    out, _ = scaled_dot_product_attention(q, keys, values)
    return mha.w_o(out.transpose(1, 2).reshape(B, 1, H * d_head))
