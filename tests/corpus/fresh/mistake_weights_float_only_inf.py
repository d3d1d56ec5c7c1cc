"""Fresh mistake in softmax_weights, appended to the reference: attention_weights: converts a floating mask to bool (mask != -inf), so finite additive biases are ignored (only -inf entries block)"""

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype != torch.bool:
            mask = mask != float("-inf")   # float mask: -inf marks blocked keys
        scores = scores.masked_fill(~mask, float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    dead = row_max == float("-inf")
    scores = scores.masked_fill(dead, 0.0)
    weights = torch.softmax(scores, dim=-1)
    return weights.masked_fill(dead, 0.0)
