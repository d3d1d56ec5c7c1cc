"""Fresh correct, appended to the reference: correct: weights = exp(s - logsumexp(s)) on a safe copy, multiplied by ~dead"""

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    dead = scores.amax(dim=-1, keepdim=True) == float("-inf")
    safe = torch.where(dead, torch.zeros_like(scores), scores)
    lse = torch.logsumexp(safe, dim=-1, keepdim=True)
    weights = torch.exp(safe - lse)
    return weights * (~dead)
