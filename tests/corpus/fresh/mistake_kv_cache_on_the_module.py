"""Fresh mistake in kv_cache, appended to the reference: decode_step keeps the keys and values on the module
Verdict on 2 Dec: SILENT (full public marks: one sequence per public test); now caught publicly."""

def decode_step(mha, x_t, cache):
    _check_decode_step(mha, x_t, cache)
    n_heads = cache.keys.size(1)
    q = split_heads(mha.w_q(x_t), n_heads)
    k_new = split_heads(mha.w_k(x_t), n_heads)
    v_new = split_heads(mha.w_v(x_t), n_heads)
    cache.append(k_new, v_new)
    if not hasattr(mha, "_past"):
        mha._past = (k_new[:, :, :0], v_new[:, :, :0])
    keys = torch.cat([mha._past[0], k_new], dim=2)
    values = torch.cat([mha._past[1], v_new], dim=2)
    mha._past = (keys, values)
    heads, _ = scaled_dot_product_attention(q, keys, values)
    return mha.w_o(merge_heads(heads))
