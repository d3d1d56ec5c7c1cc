"""Red team attack, appended to the reference: uses torch._masked_softmax in place of the refused _safe_softmax."""

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
    # TODO: call _check_mask(mask, scores) when a mask is given. Block with -inf BEFORE the softmax
    # (a bool mask marks the ALLOWED keys with True). Then make fully blocked rows zeros, not NaN.
    # BEGIN SOLUTION
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = torch.where(mask, scores, float("-inf"))  # (..., Tq, Tk)
        else:
            scores = scores + mask  # (..., Tq, Tk)
    if scores.size(-1) == 0:
        return torch.softmax(scores, dim=-1)
    # torch's masked softmax kernel (its MHA fast path's; fully blocked rows come out as zeros):
    # the same job as the refused aten::_safe_softmax, under a name the guard does not list
    return torch._masked_softmax(scores, torch.isneginf(scores), -1, None)
