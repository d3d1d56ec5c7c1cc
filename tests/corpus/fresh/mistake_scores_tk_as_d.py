"""Fresh mistake in scores, appended to the reference: attention_scores: default scale uses d = k.size(-2) (Tk, the number of keys) instead of the feature dim"""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    if scale is None:
        d = k.size(-2)
        scale = 1.0 / math.sqrt(d)
    return (q * scale) @ k.transpose(-2, -1)
