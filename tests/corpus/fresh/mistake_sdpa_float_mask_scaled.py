"""Fresh mistake in sdpa, appended to the reference: the float mask is added before the scaling, so its finite values are scaled too"""

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    """softmax(q k^T * scale + mask) v, as torch.nn.functional.scaled_dot_product_attention.

    Args:
        q: [..., Tq, d]. k: [..., Tk, d]. v: [..., Tk, dv] (same leading dims for all three).
        mask: None, or bool/floating, broadcastable to [..., Tq, Tk] (see attention_weights).
        is_causal: if True, query i may only see keys j <= i (top-left aligned when Tq != Tk).
            Combined with a mask, a key is allowed only if both allow it.
        scale: None means 1 / sqrt(d).

    Returns:
        (output [..., Tq, dv], weights [..., Tq, Tk]). float16 and bfloat16 inputs are computed in
        float32, as torch does (a float16 score overflows past 65504), and returned in their dtype.
    """
    _check_qkv(q, k, v)
    in_dtype = q.dtype
    if in_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    elif mask is not None:
        _check_mask_for(mask, q, k)
    if is_causal:
        mask = _merge_causal(mask, q.shape[-2], k.shape[-2], q.dtype, q.device)
    scores = attention_scores(q, k, scale=1.0)  # raw q.k
    if mask is not None and mask.dtype != torch.bool:
        scores = scores + mask  # additive mask goes on the scores ...
        mask = None
    scores = scores * (1.0 / math.sqrt(q.shape[-1]) if scale is None else scale)  # ... then scale
    weights = attention_weights(scores, mask)
    return (weights @ v).to(in_dtype), weights.to(in_dtype)
