"""Fresh correct, appended to the reference: correct: explicit compute_dtype (float32 for half, else input dtype) with .to(), arange-comparison causal, returns in input dtype"""

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    if mask is not None:
        _check_mask_for(mask, q, k)
    result_dtype = q.dtype
    compute_dtype = torch.float32 if result_dtype in (torch.float16, torch.bfloat16) else result_dtype
    q = q.to(compute_dtype)
    k = k.to(compute_dtype)
    v = v.to(compute_dtype)
    if mask is not None and mask.is_floating_point():
        mask = mask.to(compute_dtype)
    scores = attention_scores(q, k, scale=scale)
    if is_causal:
        n_q, n_k = scores.shape[-2], scores.shape[-1]
        visible = torch.arange(n_q, device=scores.device)[:, None] >= torch.arange(n_k, device=scores.device)
        scores = scores.masked_fill(visible.logical_not(), float("-inf"))
    weights = attention_weights(scores, mask)
    output = torch.matmul(weights, v)
    return output.to(result_dtype), weights.to(result_dtype)
