"""Fresh correct, appended to the reference (the handout says the cache's H is the module's): decode_step: splits into mha.n_heads (the module's attribute) instead of the cache's H = cache.keys.size(1)"""

def decode_step(mha, x_t, cache):
    _check_decode_step(mha, x_t, cache)
    h = mha.n_heads
    q = split_heads(mha.w_q(x_t), h)
    k = split_heads(mha.w_k(x_t), h)
    v = split_heads(mha.w_v(x_t), h)
    keys, values = cache.append(k, v)
    out, _ = scaled_dot_product_attention(q, keys, values)
    return mha.w_o(merge_heads(out))
