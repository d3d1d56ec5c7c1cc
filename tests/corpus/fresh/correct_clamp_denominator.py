"""Fresh correct, appended to the reference: correct: manual softmax with detached row max (nan_to_num neginf->0) and denominator clamp_min(finfo.tiny) so dead rows give 0/tiny = 0"""

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, -float("inf"))
        else:
            scores = scores + mask
    shift = torch.nan_to_num(scores.amax(-1, keepdim=True).detach(), neginf=0.0)
    num = (scores - shift).exp()
    den = num.sum(-1, keepdim=True).clamp_min(torch.finfo(scores.dtype).tiny)
    return num / den
