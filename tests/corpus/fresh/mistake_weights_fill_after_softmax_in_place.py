"""Fresh mistake in softmax_weights, appended to the reference: masked_fill_ on the softmax's output, which autograd saved: the backward pass fails"""

def attention_weights(scores, mask=None):
    """Attention weights: apply the mask to the scores, then softmax over the keys.

    Args:
        scores: [..., Tq, Tk].
        mask: None, or a tensor that broadcasts to [..., Tq, Tk]: bool (True = allowed) or
            floating with the scores' dtype (added to the scores, -inf = blocked).

    Returns:
        weights, [..., Tq, Tk]: each row sums to 1 over its allowed keys; blocked keys get exactly
        0.0; a row with no allowed key is all zeros (not NaN).
    """
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = torch.where(mask, scores, float("-inf"))
        else:
            scores = scores + mask
    has_key = torch.isfinite(scores).any(dim=-1, keepdim=True)
    probs = F.softmax(torch.where(has_key, scores, 0.0), dim=-1)
    return probs.masked_fill_(~has_key, 0.0)
