"""Fresh mistake in sdpa, appended to the reference: attention_weights: zeroes NaN rows with an in-place index assignment on the softmax output; forward correct, but backward raises 'modified by an inplace operation' (softmax needs its output)"""

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    weights = torch.softmax(scores, dim=-1)
    weights[torch.isnan(weights)] = 0.0   # fully masked rows: 0/0
    return weights
