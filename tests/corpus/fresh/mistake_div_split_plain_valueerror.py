"""Fresh mistake in divisibility, appended to the reference: split_heads raises a plain ValueError (not DimensionMismatchError); MultiHeadAttention.__init__ is correct"""

def split_heads(x, n_heads):
    d_model = x.size(-1)
    _check_n_heads(d_model, n_heads)
    if d_model % n_heads != 0:
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
    b, t, _ = x.shape
    return x.view(b, t, n_heads, d_model // n_heads).transpose(1, 2)
