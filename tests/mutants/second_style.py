"""Mutants in a second style: the catalogue's mistakes written as other code, and fresh mistakes.

tests/mutants/catalogue.py writes each mistake as a small edit of the reference, so a test suite could
learn to recognise the edit rather than the mistake. Here each body is rewritten the way another student
would write it (einsum instead of @, torch.where instead of masked_fill, view instead of reshape, other
names, comprehensions...). Mutants marked `fresh` are mistakes the first catalogue does not hold at all,
written from the handout (docs/lab.md) as a student would make them, to measure how well the hypotheses
of tests/support/hypotheses.py generalise. `make mutants` grades them like the catalogue and reports
their figures separately (instructor/mutants.py SECOND_STYLE_*_FLOOR).
"""

from tests.mutants.catalogue import (
    CAUSAL_ALLOWED,
    CAUSAL_BLOCK,
    MERGE_BODY,
    MHA_MERGE,
    MHA_SDPA,
    SOFTMAX_TAIL,
    SPLIT_BODY,
    SPLIT_CHECK,
    Mutant,
)

SCORES_BODY = '''\
    if scale is None:
        scale = 1.0 / math.sqrt(max(q.size(-1), 1))  # d = 0: every score is an empty sum, 0
    q = q * scale  # (..., Tq, d)
    return q @ k.transpose(-2, -1)  # (..., Tq, Tk)
'''
MASK_BODY = '''\
        if mask.dtype == torch.bool:
            scores = torch.where(mask, scores, float("-inf"))  # (..., Tq, Tk)
        else:
            scores = scores + mask  # (..., Tq, Tk)
'''
SDPA_TAIL = '''\
    if mask is not None:
        weights = attention_weights(scores, mask)  # (..., Tq, Tk)
    elif scores.requires_grad:  # no mask: no row is fully blocked (a causal query still sees key 0)
        weights = torch.softmax(scores, dim=-1)  # (..., Tq, Tk); autograd cannot differentiate out=
    else:  # no gradient wanted: write the weights over our own scores, one new [..., Tq, Tk] tensor fewer
        weights = torch.softmax(scores, dim=-1, out=scores)  # (..., Tq, Tk)
    output = weights @ v  # (..., Tq, dv)
    return output, weights
'''
CAUSAL_MASK_BODY = '''\
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)  # (T, T)
    return ones.tril()
'''
MHA_PROJECT = '''\
        q = split_heads(self.w_q(query), self.n_heads)  # (B, H, Tq, d_head)
        k = split_heads(self.w_k(key), self.n_heads)  # (B, H, Tk, d_head)
        v = split_heads(self.w_v(value), self.n_heads)  # (B, H, Tk, d_head)
'''
SIGNATURE = "    def forward(self, query, key=None, value=None, mask=None, is_causal=False):"
NUMERATOR = "    weights = torch.softmax(scores, dim=-1)  # (..., Tq, Tk)\n"


def second(name, task, cause, description, *edits, public=True, fresh=False, exclusive=False):
    mutant = Mutant(name, task, public, description, tuple(edits), exclusive, cause)
    return (mutant, fresh)


def _mha_projections(template):
    """MHA_PROJECT with each self.w_x(source) written by template.format(layer, source)."""
    lines = []
    for name, layer, source in (("q", "w_q", "query"), ("k", "w_k", "key"), ("v", "w_v", "value")):
        lines.append(f"        {name} = split_heads({template.format(layer=layer, source=source)}, self.n_heads)\n")
    return "".join(lines)


ENTRIES = (
    # -- scores -------------------------------------------------------------------------------------
    second("ss_scores_einsum_unscaled", "scores", "not scaled",
           "einsum over an ellipsis, but the scale is never applied.",
           (SCORES_BODY, '    return torch.einsum("...qd,...kd->...qk", q, k)\n')),
    second("ss_scores_over_d_matmul", "scores", "scaled by 1/d",
           "torch.matmul divided by d = q.shape[-1], not its square root.",
           (SCORES_BODY, '''\
    d = q.shape[-1]
    s = torch.matmul(q, k.transpose(-1, -2))
    return s / d if scale is None else s * scale
''')),
    second("ss_scores_over_sqrt_num_keys", "scores", "1/sqrt(Tk)",
           "The default scale uses k.shape[-2] (the number of keys).",
           (SCORES_BODY, '''\
    factor = k.shape[-2] ** -0.5 if scale is None else scale
    return (q @ k.mT) * factor
''')),
    second("ss_scores_scale_or_default", "scores", "scale=0.0 was replaced by 1/sqrt(d)",
           "`scale = scale or 1 / sqrt(d)` turns an explicit 0.0 into the default.",
           (SCORES_BODY, '''\
    scale = scale or 1 / math.sqrt(q.size(-1))
    return scale * (q @ k.transpose(-2, -1))
''')),
    second("ss_scores_swapaxes_1_2", "scores", "k.transpose(1, 2)",
           "k.swapaxes(1, 2), fine for 3-D inputs, swaps heads and positions in 4-D.",
           (SCORES_BODY, '''\
    if scale is None:
        scale = q.size(-1) ** -0.5
    return torch.matmul(q, k.swapaxes(1, 2)) * scale
''')),
    second("ss_scores_scaled_twice", "scores", "applied twice",
           "The scale is applied to q and again to the product.",
           (SCORES_BODY, '''\
    s = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    q_scaled = q * s
    return (q_scaled @ k.transpose(-2, -1)) * s
'''), fresh=True),
    # -- causal_mask --------------------------------------------------------------------------------
    second("ss_causal_mask_strict_comparison", "causal_mask", "diagonal is blocked",
           "The mask compares positions with > instead of >=, so the diagonal is blocked.",
           (CAUSAL_MASK_BODY, '''\
    rows = torch.arange(seq_len, device=device)
    return rows[:, None] > rows[None, :]
''')),
    second("ss_causal_mask_float_tril", "causal_mask", "0/1",
           "torch.tril(torch.ones(T, T)) without dtype=torch.bool.",
           (CAUSAL_MASK_BODY, "    return torch.tril(torch.ones(seq_len, seq_len, device=device))\n")),
    # -- softmax_weights ----------------------------------------------------------------------------
    second("ss_softmax_dim_2", "softmax_weights", "wrong dim",
           "F.softmax(scores, dim=2): the keys' dim for 3-D scores, the queries' for 4-D.",
           (SOFTMAX_TAIL, '''\
    row_max = scores.amax(dim=-1, keepdim=True)
    blocked_rows = torch.isneginf(row_max)
    weights = torch.nn.functional.softmax(scores.masked_fill(blocked_rows, 0.0), dim=2)
    return weights.masked_fill(blocked_rows, 0.0)
''')),
    second("ss_mask_where_inverted", "softmax_weights", "bool mask is inverted",
           "torch.where(mask, -inf, scores): True read as blocked.",
           (MASK_BODY, '''\
        if mask.dtype == torch.bool:
            scores = torch.where(mask, torch.tensor(float("-inf")), scores)
        else:
            scores = scores + mask
''')),
    second("ss_mask_multiplied_bool", "softmax_weights", "set to 0 instead of -inf",
           "The bool mask is multiplied into the scores: blocked scores become 0, not -inf.",
           (MASK_BODY, '''\
        if mask.dtype == torch.bool:
            scores = scores * mask
        else:
            scores = scores + mask
''')),
    second("ss_mask_where_after_softmax", "softmax_weights", "applied after the softmax",
           "torch.where(mask, softmax(scores), 0): the bool mask zeroes weights after the softmax.",
           (MASK_BODY, '''\
        if mask.dtype != torch.bool:
            scores = scores + mask
'''),
           (SOFTMAX_TAIL, '''\
    blocked_rows = torch.isneginf(scores).all(dim=-1, keepdim=True)
    weights = torch.where(blocked_rows, 0.0, scores.masked_fill(blocked_rows, 0.0).softmax(-1))
    if mask is not None and mask.dtype == torch.bool:
        weights = torch.where(mask, weights, 0.0)
    return weights
''')),
    second("ss_mask_finfo_min", "softmax_weights", "uniform weights 1/Tk",
           "Blocked keys get torch.finfo(dtype).min: a fully blocked row becomes uniform.",
           (MASK_BODY, '''\
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + mask
''')),
    second("ss_no_zero_row_fix", "softmax_weights", "= NaN",
           "masked_fill with -math.inf and a plain softmax: fully blocked rows give NaN.",
           (MASK_BODY, '''\
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(mask.logical_not(), -math.inf)
        else:
            scores = scores + mask
'''),
           (SOFTMAX_TAIL, "    return scores.softmax(dim=-1)\n")),
    second("ss_mask_index_assignment", "softmax_weights", "in-place operation",
           "scores[~mask] = -inf writes into the caller's scores.",
           (MASK_BODY, '''\
        if mask.dtype == torch.bool:
            scores[~mask.expand_as(scores)] = float("-inf")
        else:
            scores = scores + mask
''')),
    second("ss_float_mask_skipped", "softmax_weights", "float mask was ignored",
           "Only bool masks are handled; a float mask falls through untouched.",
           (MASK_BODY, '''\
        if mask.dtype is torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
''')),
    second("ss_softmax_via_float32", "softmax_weights", "float32 precision only",
           "softmax(..., dtype=torch.float32) then .to(scores.dtype).",
           (SOFTMAX_TAIL, '''\
    row_max = scores.amax(dim=-1, keepdim=True)
    blocked_rows = torch.isneginf(row_max)
    safe = scores.masked_fill(blocked_rows, 0.0)
    weights = torch.softmax(safe, dim=-1, dtype=torch.float32).to(scores.dtype)
    return weights.masked_fill(blocked_rows, 0.0)
''')),
    second("ss_softmax_by_hand", "softmax_weights", "without subtracting",
           "A softmax written by hand, exp(s) / exp(s).sum(), with no row max subtracted.",
           (SOFTMAX_TAIL, '''\
    e = torch.exp(scores)
    total = e.sum(dim=-1, keepdim=True)
    return e / torch.where(total == 0, torch.ones_like(total), total)
'''), fresh=True),
    second("ss_nan_to_num_after_softmax", "softmax_weights", "backward pass still goes through",
           "Fully blocked rows are repaired with nan_to_num after the softmax: right values, NaN gradients.",
           (SOFTMAX_TAIL, "    return torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)\n"), fresh=True),
    second("ss_float_mask_multiplied", "softmax_weights", "multiplied",
           "A float mask is multiplied into the scores instead of added.",
           (MASK_BODY, '''\
        if mask.dtype == torch.bool:
            scores = torch.where(mask, scores, float("-inf"))
        else:
            scores = scores * mask
'''), fresh=True),
    second("ss_bool_mask_added", "softmax_weights", "added to the scores as 0/1",
           "Every mask is added to the scores, a bool one as 0/1.",
           (MASK_BODY, "        scores = scores + mask.to(scores.dtype)\n"), fresh=True),
    # -- sdpa ---------------------------------------------------------------------------------------
    second("ss_causal_only_without_mask", "sdpa", "is_causal was ignored",
           "The causal mask is only used when no mask is given (it replaces None, not combines).",
           (CAUSAL_BLOCK, '''\
    if is_causal and mask is None:
        mask = torch.tril(torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device))
''')),
    second("ss_causal_bottom_right_triu", "sdpa", "bottom-right aligned",
           "The causal mask is built as ~triu(ones, Tk - Tq + 1): aligned to the bottom-right corner.",
           (CAUSAL_ALLOWED, '''\
        allowed = ~torch.triu(torch.ones(q_len, k_len, dtype=torch.bool, device=q.device), k_len - q_len + 1)''')),
    second("ss_output_einsum_scores", "sdpa", "multiplies v by the scores",
           "The output is einsum('...ij,...jd->...id', scores, v): the scores, not the weights.",
           (SDPA_TAIL, '''\
    weights = attention_weights(scores, mask)
    output = torch.einsum("...ij,...jd->...id", scores, v)
    return output, weights
''')),
    second("ss_scale_dropped", "sdpa", "scale argument is ignored",
           "scaled_dot_product_attention calls attention_scores(q, k, None).",
           ("    scores = attention_scores(q, k, scale)  # (..., Tq, Tk)",
            "    scores = attention_scores(q, k, None)")),
    second("ss_masks_ored", "sdpa", "combined with OR",
           "mask and the causal mask are combined with | instead of &.",
           (CAUSAL_BLOCK, '''\
    if is_causal:
        allowed = torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device).tril()
        if mask is None:
            mask = allowed
        elif mask.dtype == torch.bool:
            mask = mask | allowed
        else:
            mask = mask.masked_fill(~allowed, float("-inf"))
'''), fresh=True),
    second("ss_mask_and_in_place", "sdpa", "in-place operation",
           "`mask &= causal` changes the caller's mask.",
           (CAUSAL_BLOCK, '''\
    if is_causal:
        allowed = torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device).tril()
        if mask is None:
            mask = allowed
        elif mask.dtype == torch.bool:
            mask &= allowed
        else:
            mask = mask.masked_fill(~allowed, float("-inf"))
'''), fresh=True),
    second("ss_causal_one_ahead", "sdpa", "off by one",
           "tril(1): query i also sees key i + 1.",
           (CAUSAL_ALLOWED, CAUSAL_ALLOWED.replace(".tril()", ".tril(1)")), fresh=True),
    second("ss_pair_swapped", "sdpa", "wrong order",
           "scaled_dot_product_attention returns (weights, output).",
           (SDPA_TAIL, '''\
    weights = attention_weights(scores, mask)
    return weights, weights @ v
'''), fresh=True),
    second("ss_scale_by_value_width", "sdpa", "values' width",
           "The default scale is taken from v: 1/sqrt(v.size(-1)).",
           ("    scores = attention_scores(q, k, scale)  # (..., Tq, Tk)",
            "    scores = attention_scores(q, k, scale if scale is not None else v.size(-1) ** -0.5)"), fresh=True),
    # -- heads --------------------------------------------------------------------------------------
    second("ss_split_view_straight", "heads", "reshaped straight to [B, H, T, d_head]",
           "split_heads views (a contiguous copy of) x straight as [B, H, T, d_head].",
           (SPLIT_BODY, '''\
    b, t, _ = x.shape
    return x.contiguous().view(b, n_heads, t, -1)
''')),
    second("ss_split_interleaved_transposes", "heads", "interleaved",
           "x.reshape(B, T, -1, H) then two transposes: feature f goes to head f % H.",
           (SPLIT_BODY, '''\
    b, t, _ = x.shape
    return x.reshape(b, t, -1, n_heads).transpose(1, 3).transpose(2, 3)
''')),
    second("ss_merge_contiguous_view", "heads", "without moving H back",
           "merge_heads views the contiguous [B, H, T, d_head] as [B, T, -1].",
           (MERGE_BODY, '''\
    b, h, t, e = x.shape
    return x.contiguous().view(b, t, h * e)
''')),
    second("ss_merge_transpose_view", "heads", ".view() on a non-contiguous",
           "merge_heads calls .view on x.transpose(1, 2).",
           (MERGE_BODY, '''\
    b, h, t, e = x.shape
    return x.transpose(1, 2).view(b, t, h * e)
''')),
    # -- divisibility -------------------------------------------------------------------------------
    second("ss_split_assert_divisible", "divisibility", "assert",
           "split_heads checks with `assert d_model % n_heads == 0`.",
           (SPLIT_CHECK, '''\
    assert d_model % n_heads == 0, f"{d_model} % {n_heads} != 0"
    heads = x.unflatten(-1, (n_heads, d_model // n_heads))  # (B, T, H, d_head)
'''), fresh=True),
    # -- mha ----------------------------------------------------------------------------------------
    second("ss_mha_no_output_layer", "mha", "w_o was forgotten",
           "forward returns the merged heads as they are.",
           (MHA_MERGE, "        output = heads.transpose(1, 2).flatten(2)")),
    second("ss_mha_mean_over_heads", "mha", "averaged over the heads",
           "forward returns weights.mean(1).",
           ("        return output, weights\n", "        return output, weights.mean(1)\n")),
    second("ss_mha_scale_by_width", "mha", "1/sqrt(d_model)",
           "forward passes scale=self.d_model ** -0.5.",
           (MHA_SDPA, "        heads, weights = scaled_dot_product_attention(q, k, v, mask, is_causal, "
                      "self.d_model ** -0.5)")),
    second("ss_mha_value_from_key", "mha", "values were projected from key",
           "v = split_heads(self.w_v(key), ...).",
           ("        v = split_heads(self.w_v(value), self.n_heads)  # (B, H, Tk, d_head)\n",
            "        v = split_heads(self.w_v(key), self.n_heads)\n")),
    second("ss_mha_weights_untransposed", "mha", "untransposed",
           "Each projection is x @ layer.weight + layer.bias, without the transpose nn.Linear applies.",
           (MHA_PROJECT, _mha_projections("{source} @ self.{layer}.weight + self.{layer}.bias")), fresh=True),
    second("ss_mha_no_bias", "mha", "biases were not added",
           "Each projection is F.linear(x, layer.weight): the biases are left out.",
           (MHA_PROJECT, _mha_projections("torch.nn.functional.linear({source}, self.{layer}.weight)")), fresh=True),
    second("ss_mha_causal_by_default", "mha", "is_causal defaults to True",
           "forward's is_causal defaults to True (a decoder's habit).",
           (SIGNATURE, SIGNATURE.replace("is_causal=False", "is_causal=True")), fresh=True),
    # -- efficiency ---------------------------------------------------------------------------------
    second("ss_mha_heads_comprehension", "efficiency", "loop over the heads",
           "forward attends head by head in a list comprehension.",
           (MHA_SDPA, '''\
        pairs = [scaled_dot_product_attention(q[:, h], k[:, h], v[:, h], None if mask is None else
                 (mask[:, h] if mask.dim() == 4 and mask.size(1) > 1 else mask.squeeze(1) if mask.dim() == 4
                  else mask), is_causal) for h in range(q.size(1))]
        heads = torch.stack([p[0] for p in pairs], dim=1)
        weights = torch.stack([p[1] for p in pairs], dim=1)'''), exclusive=True),
    second("ss_sdpa_query_chunks", "efficiency", "loop over the positions",
           "scaled_dot_product_attention attends 64 queries at a time.",
           (SDPA_TAIL, '''\
    parts = []
    for start in range(0, max(scores.size(-2), 1), 64):
        rows = slice(start, start + 64)
        chunk_mask = mask
        if mask is not None and mask.dim() >= 2 and mask.size(-2) != 1:
            chunk_mask = mask[..., rows, :]
        w = attention_weights(scores[..., rows, :], chunk_mask)
        parts.append((w @ v, w))
    return torch.cat([p[0] for p in parts], dim=-2), torch.cat([p[1] for p in parts], dim=-2)
'''), fresh=True, exclusive=True),
    # -- round 3 of the fresh corpus (a helper who read only the handout), named since ------------------
    second("ss_scores_einsum_transposed", "scores", "are swapped (a transpose",
           "einsum's output subscripts swapped: the scores come out [..., Tk, Tq].",
           (SCORES_BODY, SCORES_BODY.replace("    q = q * scale  # (..., Tq, d)\n    return q @ k.transpose(-2, -1)",
                                             '    return torch.einsum("...qd,...kd->...kq", q * scale, k)')),
           fresh=True),
    second("ss_scores_transpose_from_the_front", "scores", "k.transpose(0, 1) counts dims from the front",
           "k.transpose(0, 1): right for 2-D keys only.",
           (SCORES_BODY, SCORES_BODY.replace("k.transpose(-2, -1)", "k.transpose(0, 1)")), fresh=True),
    second("ss_split_checks_dimension_1", "divisibility", "read dimension 1",
           "split_heads checks x.size(1) (the sequence length), not the last dim.",
           (SPLIT_CHECK, SPLIT_CHECK.replace("if d_model % n_heads", "if x.size(1) % n_heads")
            .replace('f"d_model={d_model} is', 'f"d_model={x.size(1)} is')), fresh=True),
    second("ss_mha_values_with_w_k", "mha", "values were projected with w_k",
           "The values are projected with w_k.",
           (MHA_PROJECT, MHA_PROJECT.replace("self.w_v(value)", "self.w_k(value)")), fresh=True),
    second("ss_tiled_output_not_rescaled", "tiled", "running output acc is not rescaled",
           "The running sum is rescaled when the max grows, the output accumulator is not.",
           ("        acc[..., first:, :].mul_(rescale).add_(",
            "        acc[..., first:, :].add_("), fresh=True),
    second("ss_kv_one_buffer", "kv_cache", "share one buffer",
           "KVCache keeps its keys and values in one buffer.",
           ("        self.values = torch.zeros(shape, dtype=dtype, device=device)",
            "        self.values = self.keys"), fresh=True),
)

SECOND_STYLE: tuple[Mutant, ...] = tuple(mutant for mutant, _ in ENTRIES)
FRESH: frozenset[str] = frozenset(mutant.name for mutant, fresh in ENTRIES if fresh)
