"""Fresh correct, appended to the reference: correct: torch.rsqrt scale tensor, F.softmax, (scores == -inf).all dead rows, view+permute split, permute+contiguous+view merge"""

import torch.nn.functional as F

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    if scale is None:
        d = q.size(-1)
        scale = torch.rsqrt(torch.tensor(float(d), dtype=q.dtype, device=q.device))
    return torch.matmul(q, k.transpose(-1, -2)) * scale

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(mask.logical_not(), -math.inf)
        else:
            scores = scores + mask
    all_blocked = (scores == -math.inf).all(dim=-1, keepdim=True)
    weights = F.softmax(scores.masked_fill(all_blocked, 0.0), dim=-1)
    return weights.masked_fill(all_blocked, 0.0)

def split_heads(x, n_heads):
    batch, seq, d_model = x.size()
    _check_n_heads(d_model, n_heads)
    if d_model % n_heads != 0:
        raise DimensionMismatchError(
            f"cannot split d_model={d_model} into n_heads={n_heads} equal heads")
    d_head = d_model // n_heads
    return x.view(batch, seq, n_heads, d_head).permute(0, 2, 1, 3)

def merge_heads(x):
    batch, n_heads, seq, d_head = x.size()
    return x.permute(0, 2, 1, 3).contiguous().view(batch, seq, n_heads * d_head)
