"""Fresh mistake in heads, appended to the reference: split_heads views as [B, T, d_head, H] (head h gets features h, h+H, ...) and merge_heads is its exact inverse, so the round trip works but heads hold the wrong features"""

def split_heads(x, n_heads):
    d_model = x.size(-1)
    _check_n_heads(d_model, n_heads)
    if d_model % n_heads != 0:
        raise DimensionMismatchError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}")
    b, t, _ = x.shape
    return x.view(b, t, d_model // n_heads, n_heads).permute(0, 3, 1, 2)

def merge_heads(x):
    b, h, t, dh = x.shape
    return x.permute(0, 2, 3, 1).reshape(b, t, h * dh)
