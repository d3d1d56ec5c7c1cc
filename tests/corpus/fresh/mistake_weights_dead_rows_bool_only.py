"""Fresh mistake in softmax_weights, appended to the reference: attention_weights: fully-masked rows detected only from a bool mask; a float mask that is -inf on a whole row (or -inf already in the scores, e.g. from is_causal) gives NaN"""

def attention_weights(scores, mask=None):
    if mask is None:
        return torch.softmax(scores, dim=-1)
    _check_mask(mask, scores)
    if mask.dtype == torch.bool:
        dead = ~mask.any(dim=-1, keepdim=True)
        scores = scores.masked_fill(~mask, float("-inf")).masked_fill(dead, 0.0)
        return torch.softmax(scores, dim=-1).masked_fill(dead, 0.0)
    return torch.softmax(scores + mask, dim=-1)
