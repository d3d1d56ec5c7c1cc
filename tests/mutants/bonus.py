"""Realistic bugs in the two bonus tasks (`tiled`, `kv_cache`), in the record format of catalogue.py.

Each mutant edits the bonus section at the end of solutions/attention.py; it must lose points in its
bonus task under the hidden suite (and the public suite too when `public` is True). instructor.mutants
grades them like the core mutants once BONUS is appended to the catalogue it reads.
"""

from tests.mutants.catalogue import mutant

# Lines of the reference that several bonus mutants edit.
TILED_SUM_UPDATE = (
    "        row_sum[..., first:, :].mul_(rescale).add_(probs.sum(dim=-1, keepdim=True))  # (..., Tq', 1)"
)
TILED_NEW_MAX = "        new_max = torch.maximum(old_max, scores.amax(dim=-1, keepdim=True))  # (..., Tq', 1)"
TILED_BLOCK_END = "        end = min(start + block_size, k_len)\n"
TILED_FIRST_ROW = (
    "        first = min(start, q_len) if is_causal else 0  # queries i < start cannot see keys >= start\n"
)
KV_ATTEND = "    heads, _ = scaled_dot_product_attention(q, keys, values)  # (B, H, 1, d_head)"
KV_APPEND_CALL = "    keys, values = cache.append(k_new, v_new)  # (B, H, T, d_head) each, T = tokens so far\n"


BONUS = (
    # -- tiled ----------------------------------------------------------------------------------
    mutant(
        "tiled_sum_not_rescaled", "tiled", True,
        "The running softmax sum l is not multiplied by exp(m - m_new) when the running max grows.",
        (TILED_SUM_UPDATE, "        row_sum[..., first:, :].add_(probs.sum(dim=-1, keepdim=True))  # (..., Tq', 1)"),
        cause="not rescaled",
    ),
    mutant(
        "tiled_max_not_carried", "tiled", True,
        "The running max is replaced by each block's own max instead of max(m, block max): exact for "
        "small scores, but exp(m - m_new) overflows when the max drops and a blocked block loses the past.",
        (TILED_NEW_MAX, "        new_max = scores.amax(dim=-1, keepdim=True)  # (..., Tq', 1)"),
    ),
    mutant(
        "tiled_block_end_off_by_one", "tiled", True,
        "Block bounds taken as inclusive: end = start + block_size - 1, so the last key of every block is skipped.",
        (TILED_BLOCK_END, "        end = min(start + block_size - 1, k_len)\n"),
        cause="last key of every full block",
    ),
    mutant(
        "tiled_causal_diagonal_blocked", "tiled", True,
        "The causal piece of each block blocks cols >= rows, so a query cannot see its own key.",
        ('            scores[..., : rows.size(0), :].masked_fill_(cols > rows, float("-inf"))  # (..., n, blk)',
         '            scores[..., : rows.size(0), :].masked_fill_(cols >= rows, float("-inf"))  # (..., n, blk)'),
        cause="diagonal",
    ),
    mutant(
        "tiled_causal_no_skipping", "tiled", True,
        "is_causal masks every block for every query but never skips the part above the diagonal (twice the work).",
        (TILED_FIRST_ROW, "        first = 0\n"),
        exclusive=True,
        cause="does not skip",
    ),
    mutant(
        "tiled_nan_on_blocked_rows", "tiled", True,
        "No guard for rows whose running max is still -inf: exp(-inf - (-inf)) gives NaN instead of zeros.",
        ("        shift = new_max.masked_fill(torch.isneginf(new_max), 0.0)  # (..., Tq', 1), finite",
         "        shift = new_max  # (..., Tq', 1)"),
    ),
    # -- kv_cache -------------------------------------------------------------------------------
    mutant(
        "kv_cache_length_not_advanced", "kv_cache", True,
        "KVCache.append never advances length: every token overwrites position 0 and attends to itself only.",
        ("        self.length = end\n", ""),
        cause="attends to itself only",
    ),
    mutant(
        "kv_own_key_omitted", "kv_cache", True,
        "decode_step reads the cached keys before appending the new token's, so a token never sees itself.",
        (KV_APPEND_CALL, (
            "    keys = cache.keys[:, :, : cache.length]  # read before the new token is stored\n"
            "    values = cache.values[:, :, : cache.length]\n"
            "    cache.append(k_new, v_new)\n"
        )),
        cause="own key is missing",
    ),
    mutant(
        "kv_causal_mask_at_decode", "kv_cache", True,
        "decode_step passes is_causal=True with its one query: top-left aligned, it sees key 0 only.",
        (KV_ATTEND,
         "    heads, _ = scaled_dot_product_attention(q, keys, values, is_causal=True)  # (B, H, 1, d_head)"),
        cause="see key 0 only",
    ),
    mutant(
        "kv_append_copies_the_prefix", "kv_cache", True,
        "KVCache.append returns copies of every cached position (torch.cat style): correct values, but each "
        "step copies the whole prefix.",
        ("        return self.keys[:, :, :end], self.values[:, :, :end]  # (B, H, length, d_head) views",
         "        return self.keys[:, :, :end].clone(), self.values[:, :, :end].clone()"),
        exclusive=True, cause="append copies the stored positions",
    ),
    mutant(
        "kv_state_on_the_module", "kv_cache", True,
        "decode_step keeps the cache on the module (mha._cache) instead of the cache it is given, so two "
        "sequences decoded with one module mix their keys.",
        (KV_APPEND_CALL, (
            "    if not hasattr(mha, \"_cache\"):\n"
            "        mha._cache = cache\n"
            "    keys, values = mha._cache.append(k_new, v_new)  # the first cache, whatever was passed\n"
        )),
    ),
)
