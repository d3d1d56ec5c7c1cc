"""What common wrong implementations return, so a failure can name the mistake ("Likely cause: ...")."""

import math


def scale_mistakes(q, k):
    raw = q @ k.transpose(-2, -1)
    d = q.size(-1)
    return {
        "the dot products are not scaled: multiply by 1/sqrt(d)": raw,
        "scaled by 1/d; the scale is 1/sqrt(d)": raw / d,
        "multiplied by sqrt(d); divide by it instead": raw * math.sqrt(d),
    }


def split_mistakes(x, n_heads):
    batch, length, d_model = x.shape
    d_head = d_model // n_heads
    return {
        "x was reshaped straight to [B, H, T, d_head]: that mixes positions into heads. "
        "View it as [B, T, H, d_head], then transpose(1, 2)": x.reshape(batch, n_heads, length, d_head),
        "the heads are interleaved (feature f went to head f % H): head h must hold the contiguous "
        "block h*d_head:(h+1)*d_head": x.reshape(batch, length, d_head, n_heads).permute(0, 3, 1, 2),
    }


def merge_mistakes(x):
    batch, n_heads, length, d_head = x.shape
    return {
        "x was reshaped to [B, T, H*d_head] without moving H back next to d_head: transpose(1, 2) first, "
        "then flatten the last two dims": x.reshape(batch, length, n_heads * d_head),
        "the heads are interleaved (merged feature e*H + h): flatten [B, T, H, d_head], not [B, T, d_head, H]":
            x.permute(0, 2, 3, 1).reshape(batch, length, n_heads * d_head),
    }
