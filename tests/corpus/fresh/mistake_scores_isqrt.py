"""Fresh mistake in scores, appended to the reference: attention_scores scales by 1 / math.isqrt(d)
Verdict on 2 Dec: WRONG CAUSE ("scaled by 1/sqrt(Tq)": Tq = 4, d = 8); now named as the integer square root."""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    if scale is None:
        scale = 1 / math.isqrt(q.size(-1))
    return (q @ k.transpose(-2, -1)) * scale
