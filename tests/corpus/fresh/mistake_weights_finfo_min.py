"""Fresh mistake in softmax_weights, appended to the reference: attention_weights: blocks bool-masked keys with torch.finfo(dtype).min instead of -inf, and has no dead-row handling: a fully bool-masked row gives uniform weights (float -inf fully masked row gives NaN)"""

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + mask
    return torch.softmax(scores, dim=-1)
