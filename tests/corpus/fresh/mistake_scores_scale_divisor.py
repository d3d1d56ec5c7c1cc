"""Fresh mistake in scores, appended to the reference: attention_scores: treats `scale` as a divisor (default sqrt(d) correct, but an explicit scale s divides by s instead of multiplying)"""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    if scale is None:
        scale = math.sqrt(q.size(-1))
    return (q @ k.transpose(-2, -1)) / scale
