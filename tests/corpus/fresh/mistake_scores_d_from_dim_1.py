"""Fresh mistake in scores, appended to the reference: attention_scores reads d as q.size(1) (the heads of a 4-D q)
Verdict on 2 Dec: four red rows (scores, sdpa, mha, efficiency "output is wrong"); now the others say fix attention_scores first."""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(1))
    return (q * scale) @ k.transpose(-2, -1)
