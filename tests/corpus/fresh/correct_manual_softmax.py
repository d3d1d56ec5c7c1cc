"""Fresh correct, appended to the reference: correct: manual softmax exp/sum with finite max subtraction, denominators 0->1 for dead rows; scores divided by math.sqrt(d) after matmul"""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    scores = torch.matmul(q, k.transpose(-2, -1))
    if scale is None:
        return scores / math.sqrt(q.size(-1))
    return scores * scale

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    # manual, numerically stable softmax
    m = scores.max(dim=-1, keepdim=True).values
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(scores - m)
    denom = e.sum(dim=-1, keepdim=True)
    denom = torch.where(denom == 0, torch.ones_like(denom), denom)
    return e / denom
