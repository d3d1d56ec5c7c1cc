"""Fresh mistake in scores, appended to the reference: attention_scores: casts q and k to float32 'for safety', so float64 inputs give float32 scores (and everything downstream)"""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(-1))
    q = q.float()
    k = k.float()
    return (q * scale) @ k.transpose(-2, -1)
