"""Fresh correct, appended to the reference: correct: einsum with ellipsis on pre-scaled q, einsum permutations 'bthd->bhtd' for split/merge"""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    if scale is None:
        scale = 1.0 / math.sqrt(k.shape[-1])
    return torch.einsum('...qd,...kd->...qk', q * scale, k)

def split_heads(x, n_heads):
    b, t, d_model = x.shape
    _check_n_heads(d_model, n_heads)
    if d_model % n_heads != 0:
        raise DimensionMismatchError(f"d_model {d_model} not divisible by {n_heads} heads")
    return torch.einsum('bthd->bhtd', x.reshape(b, t, n_heads, d_model // n_heads))

def merge_heads(x):
    b, h, t, d = x.shape
    return torch.einsum('bhtd->bthd', x).reshape(b, t, h * d)
