"""Fresh mistake in softmax_weights, appended to the reference: the max subtracted before exp() is taken over the queries (dim -2)"""

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
            neg_inf = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
            scores = torch.where(mask, scores, neg_inf)
        else:
            scores = scores + mask
    if scores.shape[-1] == 0:  # Tk == 0: amax below would fail on an empty dim
        return scores.new_zeros(scores.shape)
    # softmax by hand: subtract the row max (any constant per row gives the same softmax)
    row_max = scores.amax(dim=-2, keepdim=True).detach()
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(scores - row_max)
    denom = e.sum(dim=-1, keepdim=True)
    # a fully blocked row has e == 0 everywhere: divide by 1 instead of 0 so it stays all zeros
    denom = torch.where(denom > 0, denom, torch.ones_like(denom))
    return e / denom
