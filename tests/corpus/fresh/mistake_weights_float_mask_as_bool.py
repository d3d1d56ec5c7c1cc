"""Fresh mistake in softmax_weights, appended to the reference: attention_weights: a floating mask is turned into bool with mask.bool() (0.0 -> False = blocked, -inf -> True = allowed), inverting additive masks and ignoring finite biases"""

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        scores = scores.masked_fill(~mask.bool(), float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    dead = row_max == float("-inf")
    scores = scores.masked_fill(dead, 0.0)
    weights = torch.softmax(scores, dim=-1)
    return weights.masked_fill(dead, 0.0)
