"""Fresh mistake in sdpa, appended to the reference: is_causal skipped when there is a single query
Verdict on 2 Dec: SILENT (full public marks); now caught publicly (Tq = 1 in the top-left test), shown without a cause:
at Tq = 1 an inverted or bottom-right causal mask gives the same numbers, so no cause is proven."""

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    scores = attention_scores(q, k, scale)
    if is_causal and q.size(-2) > 1:
        allowed = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = attention_weights(scores, mask)
    return weights @ v, weights
