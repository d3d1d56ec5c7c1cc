"""Fresh mistake in heads, appended to the reference: split_heads: reshapes straight to [B, H, T, d_head] without the transpose (merge_heads is correct)"""

def split_heads(x, n_heads):
    d_model = x.size(-1)
    _check_n_heads(d_model, n_heads)
    if d_model % n_heads != 0:
        raise DimensionMismatchError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}")
    b, t, _ = x.shape
    return x.reshape(b, n_heads, t, d_model // n_heads)
