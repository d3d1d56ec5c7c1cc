"""Fresh mistake in softmax_weights, appended to the reference: attention_weights: applies the mask in place (masked_fill_ / +=), mutating the caller's scores tensor"""

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores.masked_fill_(~mask, float("-inf"))
        else:
            scores += mask
    row_max = scores.amax(dim=-1, keepdim=True)
    dead = row_max == float("-inf")
    weights = torch.softmax(scores.masked_fill(dead, 0.0), dim=-1)
    return weights.masked_fill(dead, 0.0)
