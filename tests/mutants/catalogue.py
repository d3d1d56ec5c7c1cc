"""Realistic student bugs, written as small edits of the reference solution.

Each mutant is the reference solutions/attention.py with a few replacements of code applied. An edit's
`old` is matched by its code, comments aside (instructor.anchors): rewording a comment of the reference
breaks no mutant.
`python -m instructor.mutants` (make mutants) grades every mutant and checks that its `task` loses points
under the hidden suite, and under the public suite too when `public` is True (the most common
mistakes, which students should be able to see before they submit). Mutants marked `exclusive` must
lose points in their own task ONLY (a loop is slow, not wrong: only `efficiency` may notice it).

Every `old` must occur exactly once in the reference, or in the functions of the mutant's task (grader.tasks)
where the same line stands in two functions: when the reference's code changes, instructor.mutants stops
with the mutant's name instead of silently testing the unchanged reference.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str  # snake_case id, also the folder name
    task: str  # the graded task that must lose points (lab/lab.json)
    public: bool  # True when tests/public must catch it as well
    description: str  # one sentence a TA would understand
    edits: tuple  # ((old, new), ...) replacements of code in solutions/attention.py
    exclusive: bool = False  # True when no task other than `task` may lose points
    # A few words of the "Likely cause: ..." line the public suite prints for this mistake (matched
    # case-insensitively inside that line); None while the public suite does not name it yet.
    cause: str | None = None


def mutant(name, task, public, description, *edits, exclusive=False, cause=None):
    return Mutant(name, task, public, description, tuple(edits), exclusive, cause)


# Lines of the reference that several mutants edit.
SCALE_Q = "    q = q * scale  # (..., Tq, d)\n"
DEFAULT_SCALE = "        scale = 1.0 / math.sqrt(max(q.size(-1), 1))  # d = 0: every score is an empty sum, 0\n" + SCALE_Q
BOOL_FILL = '            scores = torch.where(mask, scores, float("-inf"))  # (..., Tq, Tk)'
FLOAT_ADD = "            scores = scores + mask  # (..., Tq, Tk)"
SOFTMAX = "    weights = torch.softmax(scores, dim=-1)  # (..., Tq, Tk)"
SOFTMAX_TAIL = '''\
    row_max = scores.amax(dim=-1, keepdim=True)  # (..., Tq, 1)
    blocked_rows = torch.isneginf(row_max)  # (..., Tq, 1), True where every key is blocked
    scores = scores.masked_fill(blocked_rows, 0.0)  # (..., Tq, Tk), finite: softmax gives no NaN
''' + SOFTMAX + '''
    return weights.masked_fill(blocked_rows, 0.0)
'''
CAUSAL_FILL = '''\
        causal_bias = torch.where(allowed, 0.0, float("-inf"))  # (Tq, Tk): 0 where allowed, -inf where blocked
        scores.add_(causal_bias)  # (..., Tq, Tk), in place on our own scores: an add is vectorised, masked_fill_ not
'''
CAUSAL_BLOCK = '''\
    if is_causal:
        q_len, k_len = scores.shape[-2:]
        allowed = torch.ones(q_len, k_len, dtype=torch.bool, device=q.device).tril()  # (Tq, Tk)
''' + CAUSAL_FILL
CAUSAL_ALLOWED = "        allowed = torch.ones(q_len, k_len, dtype=torch.bool, device=q.device).tril()  # (Tq, Tk)"
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
SPLIT_BODY = '''\
    heads = x.unflatten(-1, (n_heads, d_model // n_heads))  # (B, T, H, d_head)
    return heads.transpose(-3, -2)  # (B, H, T, d_head)
'''
MERGE_BODY = '''\
    heads = x.transpose(-3, -2)  # (B, T, H, d_head)
    return heads.flatten(-2)  # (B, T, H * d_head)
'''
SPLIT_RAISE = "    if d_model % n_heads != 0:\n        raise DimensionMismatchError("
MHA_RAISE = "        if d_model % n_heads != 0:\n            raise DimensionMismatchError("
MHA_CHECK = '''\
        if d_model % n_heads != 0:
            raise DimensionMismatchError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}"
            )
        self.d_model = d_model
'''
MHA_DEFAULTS = '''\
        key = query if key is None else key
        value = key if value is None else value
'''
MHA_SDPA = "        heads, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)  # (B, H, Tq, d_head)"
MHA_MERGE = "        output = self.w_o(merge_heads(heads))  # (B, Tq, d_model)"
SPLIT_CHECK = '''\
    if d_model % n_heads != 0:
        raise DimensionMismatchError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}"
        )
    heads = x.unflatten(-1, (n_heads, d_model // n_heads))  # (B, T, H, d_head)
'''


CATALOGUE = (
    # -- scores ---------------------------------------------------------------------------------
    mutant(
        "scores_missing_scale", "scores", True,
        "attention_scores returns q @ k^T without multiplying by the scale.",
        (SCALE_Q, ""),
        cause="not scaled",
    ),
    mutant(
        "scores_divide_by_d", "scores", True,
        "The default scale is 1/d instead of 1/sqrt(d).",
        (DEFAULT_SCALE, "        scale = 1.0 / q.size(-1)\n" + SCALE_Q),
        cause="scaled by 1/d",
    ),
    mutant(
        "scores_multiply_by_sqrt_d", "scores", True,
        "The scores are multiplied by sqrt(d) instead of divided by it.",
        (DEFAULT_SCALE, "        scale = math.sqrt(q.size(-1))\n" + SCALE_Q),
        cause="multiplied by sqrt(d)",
    ),
    mutant(
        "scores_explicit_scale_ignored", "scores", True,
        "An explicit scale= argument is overwritten by 1/sqrt(d).",
        ("    if scale is None:\n" + DEFAULT_SCALE, "    scale = 1.0 / math.sqrt(q.size(-1))\n" + SCALE_Q),
        cause="scale argument is ignored",
    ),
    mutant(
        "scores_scale_zero_as_none", "scores", True,
        "`if not scale:` instead of `if scale is None:` replaces an explicit scale=0.0 by 1/sqrt(d).",
        ("    if scale is None:\n" + DEFAULT_SCALE, "    if not scale:\n" + DEFAULT_SCALE),
        cause="scale=0.0 was replaced by 1/sqrt(d)",
    ),
    mutant(
        "scores_transpose_dims_1_2", "scores", True,
        "k.transpose(1, 2) assumes 3-D inputs; with [B, H, T, d] it swaps heads and positions.",
        ("    return q @ k.transpose(-2, -1)  # (..., Tq, Tk)", "    return q @ k.transpose(1, 2)"),
        cause="k.transpose(1, 2)",
    ),
    mutant(
        "scores_scaled_by_sqrt_tk", "scores", True,
        "The default scale uses the number of keys: 1/sqrt(Tk) instead of 1/sqrt(d).",
        (DEFAULT_SCALE, "        scale = 1.0 / math.sqrt(k.size(-2))\n" + SCALE_Q),
        cause="1/sqrt(Tk)",
    ),
    mutant(
        "scores_reshape_k", "scores", True,
        "k is reshaped to [..., d, Tk] instead of transposed, which mixes the features of different keys.",
        ("    return q @ k.transpose(-2, -1)  # (..., Tq, Tk)",
         "    return q @ k.reshape(*k.shape[:-2], k.size(-1), k.size(-2))  # (..., Tq, Tk)"),
        cause="reshaped to [..., d, Tk]",
    ),
    mutant(
        "scores_einsum_4d_only", "scores", True,
        "The lecture's einsum('bhid,bhjd->bhij') only accepts 4-D inputs: 2-D, 3-D and 5-D inputs raise.",
        ("    return q @ k.transpose(-2, -1)  # (..., Tq, Tk)",
         '    return torch.einsum("bhid,bhjd->bhij", q, k)  # (B, H, Tq, Tk)'),
        cause="'...id,...jd->...ij'",
    ),
    # -- causal_mask ----------------------------------------------------------------------------
    mutant(
        "causal_mask_triu", "causal_mask", True,
        "The causal mask is upper-triangular (triu): it allows the future and blocks the past.",
        ("    return ones.tril()\n", "    return ones.triu()\n"),
        cause="upper triangle (triu)",
    ),
    mutant(
        "causal_mask_without_diagonal", "causal_mask", True,
        "tril(-1) blocks the diagonal, so a token cannot attend to itself.",
        ("    return ones.tril()\n", "    return ones.tril(-1)\n"),
        cause="diagonal is blocked",
    ),
    mutant(
        "causal_mask_float", "causal_mask", True,
        "The causal mask is a float 0/1 matrix instead of a bool one.",
        ("    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)  # (T, T)",
         "    ones = torch.ones(seq_len, seq_len, device=device)  # (T, T)"),
        cause="0/1",
    ),
    mutant(
        "causal_mask_device_ignored", "causal_mask", True,
        "The device argument is ignored: the mask is always built on the CPU.",
        ("    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)  # (T, T)",
         "    ones = torch.ones(seq_len, seq_len, dtype=torch.bool)  # (T, T)"),
        cause="device argument is not used",
    ),
    mutant(
        "causal_mask_built_then_moved", "causal_mask", True,
        "The mask is built on the CPU, then moved to the device asked for.",
        ("    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)  # (T, T)",
         "    ones = torch.ones(seq_len, seq_len, dtype=torch.bool).to(device)  # (T, T)"),
        cause="tensor factory without device=device",
    ),
    # -- softmax_weights ------------------------------------------------------------------------
    mutant(
        "softmax_wrong_dim", "softmax_weights", True,
        "The softmax runs over the queries (dim=-2) instead of the keys (dim=-1).",
        (SOFTMAX, SOFTMAX.replace("dim=-1", "dim=-2")),
        cause="wrong dim",
    ),
    mutant(
        "mask_after_softmax", "softmax_weights", True,
        "The bool mask zeroes weights after the softmax, so the allowed weights no longer sum to 1.",
        (BOOL_FILL, "            pass  # applied after the softmax below"),
        ("    return weights.masked_fill(blocked_rows, 0.0)\n",
         "    weights = weights.masked_fill(blocked_rows, 0.0)\n"
         "    if mask is not None and mask.dtype == torch.bool:\n"
         "        weights = weights.masked_fill(~mask, 0.0)\n"
         "    return weights\n"),
        cause="applied after the softmax",
    ),
    mutant(
        "mask_fill_zero", "softmax_weights", True,
        "Blocked scores are filled with 0 instead of -inf, so exp(0) still gives them weight.",
        (BOOL_FILL, "            scores = scores.masked_fill(~mask, 0.0)  # (..., Tq, Tk)"),
        cause="set to 0 instead of -inf",
    ),
    mutant(
        "bool_mask_inverted", "softmax_weights", True,
        "The bool mask is read as True = blocked (nn.MultiheadAttention's convention), not True = allowed.",
        (BOOL_FILL, '            scores = scores.masked_fill(mask, float("-inf"))  # (..., Tq, Tk)'),
        cause="bool mask is inverted",
    ),
    mutant(
        "float_mask_as_mask_eq_0", "softmax_weights", True,
        "Every mask goes through masked_fill(mask == 0, -inf), so a float mask blocks its allowed (0.0) keys.",
        ('''\
        if mask.dtype == torch.bool:
''' + BOOL_FILL + '''
        else:
''' + FLOAT_ADD + "\n",
         '''\
        scores = scores.masked_fill(mask == 0, float("-inf"))  # (..., Tq, Tk)
'''),
        cause="0/1 mask",
    ),
    mutant(
        "float_mask_ignored", "softmax_weights", True,
        "A floating (additive) mask is accepted but never added to the scores.",
        (FLOAT_ADD, "            pass  # float masks ignored"),
        cause="float mask was ignored",
    ),
    mutant(
        "nan_on_fully_masked_rows", "softmax_weights", True,
        "No fix for rows whose keys are all blocked: softmax(-inf, ..., -inf) gives NaN instead of zeros.",
        (SOFTMAX_TAIL, "    return torch.softmax(scores, dim=-1)  # (..., Tq, Tk)\n"),
        cause="= NaN",
    ),
    mutant(
        "in_place_masked_fill", "softmax_weights", True,
        "masked_fill_ (in place) overwrites the caller's scores tensor with -inf.",
        (BOOL_FILL, '            scores = scores.masked_fill_(~mask, float("-inf"))  # in place!'),
        cause="in-place operation",
    ),
    mutant(
        "mask_fill_minus_1e9", "softmax_weights", True,
        "Blocked keys get -1e9 instead of -inf, so a fully blocked row gets uniform weights instead of zeros.",
        (BOOL_FILL, "            scores = torch.where(mask, scores, -1e9)  # (..., Tq, Tk)"),
        cause="uniform weights 1/Tk",
    ),
    mutant(
        "blocked_rows_not_zeroed", "softmax_weights", True,
        "Fully blocked rows are made finite before the softmax but not set to 0.0 after it: uniform weights.",
        ("    return weights.masked_fill(blocked_rows, 0.0)\n", "    return weights\n"),
        cause="uniform weights 1/Tk",
    ),
    mutant(
        "softmax_in_float32", "softmax_weights", True,
        "The softmax is computed in float32 and cast back, so float64 weights lose their precision.",
        (SOFTMAX, "    weights = torch.softmax(scores.float(), dim=-1).to(scores.dtype)  # (..., Tq, Tk)"),
        cause="float32 precision only",
    ),
    mutant(
        "numpy_softmax", "softmax_weights", True,
        "The softmax is computed with NumPy (the grader refuses the round trip, naming it).",
        ("import math\n", "import math\n\nimport numpy as np\n"),
        (SOFTMAX, '''\
    array = scores.detach().numpy()  # (..., Tq, Tk)
    exp = np.exp(array - array.max(axis=-1, keepdims=True))
    weights = torch.from_numpy(exp / exp.sum(axis=-1, keepdims=True))'''),
    ),
    mutant(
        "softmax_of_detached_scores", "softmax_weights", True,
        "The softmax runs on scores.detach(): the values are right, but no gradient reaches the scores.",
        (SOFTMAX, "    weights = torch.softmax(scores.detach(), dim=-1)  # (..., Tq, Tk)"),
        cause="cut off from autograd",
    ),
    # -- sdpa -----------------------------------------------------------------------------------
    mutant(
        "is_causal_ignored", "sdpa", True,
        "scaled_dot_product_attention accepts is_causal but never applies the causal mask.",
        (CAUSAL_BLOCK, ""),
        cause="is_causal was ignored",
    ),
    mutant(
        "is_causal_bottom_right", "sdpa", True,
        "The causal mask is aligned to the bottom-right corner (tril(Tk - Tq)) instead of torch's top-left.",
        (CAUSAL_ALLOWED,
         "        allowed = torch.ones(q_len, k_len, dtype=torch.bool, device=q.device).tril(k_len - q_len)"),
        cause="bottom-right aligned",
    ),
    mutant(
        "is_causal_square_mask", "sdpa", True,
        "is_causal builds causal_mask(Tq), a square mask that fails when Tq != Tk.",
        (CAUSAL_ALLOWED, "        allowed = causal_mask(q_len, device=q.device)  # (Tq, Tq)"),
        cause="shape [T, T] of one length",
    ),
    mutant(
        "mask_ignored_when_causal", "sdpa", True,
        "With is_causal=True the causal mask replaces the caller's mask instead of being combined with it.",
        (CAUSAL_FILL,
         "        mask = allowed  # overwrites the caller's mask\n"),
        cause="mask was ignored when is_causal=True",
    ),
    mutant(
        "sdpa_scale_not_passed", "sdpa", True,
        "scaled_dot_product_attention drops its scale= argument when computing the scores.",
        ("    scores = attention_scores(q, k, scale)  # (..., Tq, Tk)",
         "    scores = attention_scores(q, k)  # (..., Tq, Tk)"),
        cause="scale argument is ignored",
    ),
    mutant(
        "output_from_scores", "sdpa", True,
        "The output multiplies v by the raw scores instead of the softmax weights.",
        # The whole tail: under no_grad the reference's softmax writes the weights over its scores (out=).
        (SDPA_TAIL, '''\
    weights = attention_weights(scores, mask)  # (..., Tq, Tk)
    output = scores @ v  # (..., Tq, dv)
    return output, weights
'''),
        cause="multiplies v by the scores",
    ),
    mutant(
        "module_form_drops_is_causal", "sdpa", True,
        "ScaledDotProductAttention.forward does not pass is_causal on to the function.",
        ("        return scaled_dot_product_attention(query, key, value, mask=mask, is_causal=is_causal)",
         "        return scaled_dot_product_attention(query, key, value, mask=mask)"),
        cause="does not pass is_causal on",
    ),
    mutant(
        "is_causal_upper_triangle", "sdpa", True,
        "is_causal keeps the upper triangle (triu): the future is allowed and the past blocked.",
        (CAUSAL_ALLOWED, CAUSAL_ALLOWED.replace(".tril()", ".triu()")),
        cause="causal mask is inverted (triu)",
    ),
    mutant(
        "is_causal_without_diagonal", "sdpa", True,
        "is_causal uses tril(-1): a query may not see its own key.",
        (CAUSAL_ALLOWED, CAUSAL_ALLOWED.replace(".tril()", ".tril(-1)")),
        cause="diagonal is blocked",
    ),
    mutant(
        "causal_and_float_mask", "sdpa", True,
        "is_causal is combined with the mask by `mask & causal`, which raises for a float mask.",
        (CAUSAL_FILL,
         "        mask = allowed if mask is None else mask & allowed\n"),
        cause="`&` was applied to a floating tensor",
    ),
    mutant(
        "sdpa_returns_scores", "sdpa", True,
        "scaled_dot_product_attention returns the scores instead of the weights (the output is right).",
        # The whole tail: under no_grad the reference's softmax writes the weights over its scores (out=).
        (SDPA_TAIL, '''\
    weights = attention_weights(scores, mask)  # (..., Tq, Tk)
    output = weights @ v  # (..., Tq, dv)
    return output, scores
'''),
        cause="scores are returned instead of the weights",
    ),
    mutant(
        "sdpa_weights_detached", "sdpa", True,
        "The returned weights are detached, so no gradient flows back through them.",
        ("    output = weights @ v  # (..., Tq, dv)\n    return output, weights\n",
         "    output = weights @ v  # (..., Tq, dv)\n    return output, weights.detach()\n"),
        cause="detached",
    ),
    # -- heads ----------------------------------------------------------------------------------
    mutant(
        "split_without_transpose", "heads", True,
        "split_heads reshapes [B, T, d_model] straight to [B, H, T, d_head], mixing positions into heads.",
        (SPLIT_BODY, "    return x.reshape(x.size(0), n_heads, x.size(1), d_model // n_heads)\n"),
        cause="reshaped straight to [B, H, T, d_head]",
    ),
    mutant(
        "interleaved_heads", "heads", True,
        "split_heads interleaves the features (feature f goes to head f % H) instead of contiguous blocks.",
        (SPLIT_BODY, '''\
    heads = x.unflatten(-1, (d_model // n_heads, n_heads))  # (B, T, d_head, H)
    return heads.permute(0, 3, 1, 2)  # (B, H, T, d_head)
'''),
        cause="interleaved",
    ),
    mutant(
        "merge_without_inverse_permute", "heads", True,
        "merge_heads reshapes [B, H, T, d_head] straight to [B, T, d_model] without moving H back first.",
        (MERGE_BODY, "    return x.reshape(x.size(0), x.size(2), -1)  # (B, T, H * d_head)\n"),
        cause="without moving H back",
    ),
    mutant(
        "merge_with_view", "heads", True,
        "merge_heads calls .view on the transposed (non-contiguous) tensor, which raises a RuntimeError.",
        ("    return heads.flatten(-2)  # (B, T, H * d_head)",
         "    return heads.view(heads.size(0), heads.size(1), -1)  # (B, T, H * d_head)"),
        cause=".view() on a non-contiguous",
    ),
    # -- divisibility ---------------------------------------------------------------------------
    mutant(
        "plain_value_error_everywhere", "divisibility", True,
        "split_heads and MultiHeadAttention raise a plain ValueError instead of DimensionMismatchError.",
        (SPLIT_RAISE, "    if d_model % n_heads != 0:\n        raise ValueError("),
        (MHA_RAISE, "        if d_model % n_heads != 0:\n            raise ValueError("),
        cause="plain ValueError",
    ),
    mutant(
        "plain_value_error_in_mha", "divisibility", True,
        "MultiHeadAttention.__init__ raises a plain ValueError instead of DimensionMismatchError.",
        (MHA_RAISE, "        if d_model % n_heads != 0:\n            raise ValueError("),
        cause="plain ValueError",
    ),
    mutant(
        "plain_value_error_in_split_heads", "divisibility", True,
        "split_heads raises a plain ValueError instead of DimensionMismatchError.",
        (SPLIT_RAISE, "    if d_model % n_heads != 0:\n        raise ValueError("),
        cause="plain ValueError",
    ),
    mutant(
        "no_divisibility_check_in_mha", "divisibility", True,
        "MultiHeadAttention.__init__ accepts d_model=16, n_heads=5 (the error only appears in forward).",
        (MHA_CHECK, "        self.d_model = d_model\n"),
        cause="__init__ does not check d_model % n_heads",
    ),
    mutant(
        "no_divisibility_check_in_split_heads", "divisibility", True,
        "Only MultiHeadAttention checks d_model % n_heads: split_heads(x, 5) on 16 features fails inside "
        "torch's reshape with a RuntimeError.",
        (SPLIT_CHECK, "    heads = x.unflatten(-1, (n_heads, d_model // n_heads))  # (B, T, H, d_head)\n"),
        cause="split_heads does not check d_model % n_heads",
    ),
    # -- mha ------------------------------------------------------------------------------------
    mutant(
        "missing_w_o", "mha", True,
        "The merged heads are returned without the output projection w_o.",
        (MHA_MERGE, "        output = merge_heads(heads)  # (B, Tq, d_model)"),
        cause="w_o was forgotten",
    ),
    mutant(
        "mha_self_attention_only", "mha", True,
        "forward ignores key and value and always attends over the query (self-attention only).",
        (MHA_DEFAULTS, "        key = value = query\n"),
        cause="key and value were ignored",
    ),
    mutant(
        "value_defaults_to_query", "mha", True,
        "When value is omitted it defaults to query instead of key.",
        ("        value = key if value is None else value\n",
         "        value = query if value is None else value\n"),
        cause="value defaulted to query",
    ),
    mutant(
        "mha_value_from_key", "mha", True,
        "The values are projected from key instead of value (v = w_v(key)).",
        ("split_heads(self.w_v(value), self.n_heads)", "split_heads(self.w_v(key), self.n_heads)"),
        cause="values were projected from key",
    ),
    mutant(
        "mha_keys_with_w_q", "mha", True,
        "The keys are projected with w_q instead of w_k.",
        ("split_heads(self.w_k(key), self.n_heads)", "split_heads(self.w_q(key), self.n_heads)"),
        cause="keys were projected with w_q",
    ),
    mutant(
        "mha_mask_ignored", "mha", True,
        "forward accepts mask but does not pass it on to scaled_dot_product_attention.",
        (MHA_SDPA,
         "        heads, weights = scaled_dot_product_attention(q, k, v, None, is_causal)  # (B, H, Tq, d_head)"),
        cause="mask was ignored: not passed on",
    ),
    mutant(
        "mha_is_causal_not_passed", "mha", True,
        "forward accepts is_causal but does not pass it on to scaled_dot_product_attention.",
        (MHA_SDPA, "        heads, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, H, Tq, d_head)"),
        cause="is_causal was ignored: not passed on",
    ),
    mutant(
        "mha_scale_by_sqrt_d_model", "mha", True,
        "Each head's scores are scaled by 1/sqrt(d_model) instead of 1/sqrt(d_head).",
        (MHA_SDPA, "        heads, weights = scaled_dot_product_attention(\n"
                   "            q, k, v, mask, is_causal, scale=1.0 / math.sqrt(self.d_model)\n"
                   "        )  # (B, H, Tq, d_head)"),
        cause="1/sqrt(d_model)",
    ),
    mutant(
        "mha_merge_without_transpose", "mha", True,
        "forward flattens the heads [B, H, T, d_head] straight to [B, T, d_model] instead of calling merge_heads.",
        (MHA_MERGE, "        output = self.w_o(heads.reshape(heads.size(0), heads.size(2), -1))  # (B, Tq, d_model)"),
        cause="without moving H back",
    ),
    mutant(
        "mha_merge_with_view", "mha", True,
        "forward merges the heads with transpose(1, 2).view(...), which raises on the non-contiguous tensor.",
        (MHA_MERGE, "        output = self.w_o(heads.transpose(1, 2).view(heads.size(0), heads.size(2), -1))"),
        cause=".view() on a non-contiguous",
    ),
    mutant(
        "mha_head_averaged_weights", "mha", True,
        "forward returns the weights averaged over heads ([B, Tq, Tk]) instead of per head.",
        ("        return output, weights\n", "        return output, weights.mean(dim=1)\n"),
        cause="averaged over the heads",
    ),
    mutant(
        "mha_bias_hardcoded", "mha", True,
        "The projections always have a bias: the bias=False argument is ignored.",
        ("        self.w_q = nn.Linear(d_model, d_model, bias=bias)", "        self.w_q = nn.Linear(d_model, d_model)"),
        ("        self.w_k = nn.Linear(d_model, d_model, bias=bias)", "        self.w_k = nn.Linear(d_model, d_model)"),
        ("        self.w_v = nn.Linear(d_model, d_model, bias=bias)", "        self.w_v = nn.Linear(d_model, d_model)"),
        ("        self.w_o = nn.Linear(d_model, d_model, bias=bias)", "        self.w_o = nn.Linear(d_model, d_model)"),
        cause="bias flag is ignored",
    ),
    mutant(
        "mha_split_with_d_head", "mha", True,
        "forward splits into d_head heads instead of n_heads (invisible when d_model = n_heads ** 2).",
        ("split_heads(self.w_q(query), self.n_heads)", "split_heads(self.w_q(query), self.d_model // self.n_heads)"),
        ("split_heads(self.w_k(key), self.n_heads)", "split_heads(self.w_k(key), self.d_model // self.n_heads)"),
        ("split_heads(self.w_v(value), self.n_heads)", "split_heads(self.w_v(value), self.d_model // self.n_heads)"),
        cause="was split into d_head",
    ),
    mutant(
        "mha_dropout_at_eval", "mha", True,
        "forward applies dropout with training=True, so even in eval() mode the result is random.",
        (MHA_SDPA, MHA_SDPA + "\n        heads = torch.nn.functional.dropout(heads, p=0.1, training=True)"),
        cause="dropout",
    ),
    # -- efficiency (results stay correct: only `efficiency` may lose points) ---------------------
    mutant(
        "sdpa_loop_over_batch_and_heads", "efficiency", True,
        "scaled_dot_product_attention loops in Python over every (batch, head) pair.",
        (SDPA_TAIL, '''\
    if mask is not None:
        _check_mask(mask, scores)
        mask = mask.expand(scores.shape).reshape(-1, *scores.shape[-2:])  # (N, Tq, Tk)
    flat_scores = scores.reshape(-1, *scores.shape[-2:])  # (N, Tq, Tk), N = all leading dims
    flat_v = v.reshape(-1, *v.shape[-2:])  # (N, Tk, dv)
    outputs, all_weights = [], []
    for n in range(flat_scores.size(0)):  # one (batch, head) pair at a time
        w = attention_weights(flat_scores[n], None if mask is None else mask[n])  # (Tq, Tk)
        all_weights.append(w)
        outputs.append(w @ flat_v[n])  # (Tq, dv)
    weights = torch.stack(all_weights).reshape(scores.shape)
    output = torch.stack(outputs).reshape(*scores.shape[:-1], v.size(-1))
    return output, weights
'''),
        exclusive=True,
        cause="loop over the batch and the heads",
    ),
    mutant(
        "sdpa_loop_over_positions", "efficiency", True,
        "scaled_dot_product_attention attends one query position at a time in a Python loop.",
        (SDPA_TAIL, '''\
    if mask is not None:
        _check_mask(mask, scores)
        mask = mask.expand(scores.shape)  # (..., Tq, Tk)
    output_rows, weight_rows = [], []
    for i in range(scores.size(-2)):  # one query position at a time
        row_mask = None if mask is None else mask[..., i : i + 1, :]  # (..., 1, Tk)
        row_weights = attention_weights(scores[..., i : i + 1, :], row_mask)  # (..., 1, Tk)
        weight_rows.append(row_weights)
        output_rows.append(row_weights @ v)  # (..., 1, dv)
    if not weight_rows:
        weights = attention_weights(scores, mask)
        return weights @ v, weights
    return torch.cat(output_rows, dim=-2), torch.cat(weight_rows, dim=-2)
'''),
        exclusive=True,
        cause="loop over the positions",
    ),
    mutant(
        "weights_loop_over_positions", "efficiency", True,
        "attention_weights computes the masked softmax one query position at a time in a Python loop.",
        (SOFTMAX_TAIL, '''\
    rows = []
    for i in range(scores.size(-2)):  # one query position at a time
        row = scores[..., i, :]  # (..., Tk)
        blocked = torch.isneginf(row).all(dim=-1, keepdim=True)  # (..., 1)
        row_weights = torch.softmax(row.masked_fill(blocked, 0.0), dim=-1)
        rows.append(row_weights.masked_fill(blocked, 0.0))
    return torch.stack(rows, dim=-2) if rows else torch.softmax(scores, dim=-1)
'''),
        exclusive=True,
        cause="loop over the positions",
    ),
    mutant(
        "mha_loop_over_heads", "efficiency", True,
        "MultiHeadAttention.forward calls scaled_dot_product_attention once per head in a Python loop.",
        (MHA_SDPA, '''\
        outputs, all_weights = [], []
        for h in range(self.n_heads):  # one head at a time
            head_mask = mask
            if isinstance(mask, torch.Tensor) and mask.dim() >= 3 and mask.size(-3) > 1:
                head_mask = mask[..., h : h + 1, :, :]
            out_h, w_h = scaled_dot_product_attention(
                q[:, h : h + 1], k[:, h : h + 1], v[:, h : h + 1], head_mask, is_causal
            )
            outputs.append(out_h)
            all_weights.append(w_h)
        heads = torch.cat(outputs, dim=1)  # (B, H, Tq, d_head)
        weights = torch.cat(all_weights, dim=1)  # (B, H, Tq, Tk)'''),
        exclusive=True,
        cause="loop over the heads",
    ),
    mutant(
        "mha_loop_over_batch", "efficiency", True,
        "MultiHeadAttention.forward calls scaled_dot_product_attention once per batch item in a Python loop.",
        (MHA_SDPA, '''\
        outputs, all_weights = [], []
        for b in range(q.size(0)):  # one batch item at a time
            item_mask = mask
            if isinstance(mask, torch.Tensor) and mask.dim() == 4 and mask.size(0) > 1:
                item_mask = mask[b : b + 1]
            out_b, w_b = scaled_dot_product_attention(q[b : b + 1], k[b : b + 1], v[b : b + 1], item_mask, is_causal)
            outputs.append(out_b)
            all_weights.append(w_b)
        heads = torch.cat(outputs)  # (B, H, Tq, d_head)
        weights = torch.cat(all_weights)  # (B, H, Tq, Tk)'''),
        exclusive=True,
        cause="loop over the batch",
    ),
    mutant(
        "mha_loop_over_positions", "efficiency", True,
        "MultiHeadAttention.forward attends one query position at a time in a Python loop.",
        (MHA_SDPA, '''\
        q_len, k_len = q.size(-2), k.size(-2)
        full_mask = None if mask is None else torch.broadcast_to(mask, (*q.shape[:2], q_len, k_len))
        causal = torch.ones(q_len, k_len, dtype=torch.bool, device=q.device).tril()  # (Tq, Tk)
        outputs, all_weights = [], []
        for i in range(q_len):  # one query position at a time
            row_mask = None if full_mask is None else full_mask[..., i : i + 1, :]  # (B, H, 1, Tk)
            if is_causal:
                row_allowed = causal[i : i + 1]  # (1, Tk)
                if row_mask is None:
                    row_mask = row_allowed
                elif row_mask.dtype == torch.bool:
                    row_mask = row_mask & row_allowed
                else:
                    row_mask = row_mask.masked_fill(~row_allowed, float("-inf"))
            out_i, w_i = scaled_dot_product_attention(q[..., i : i + 1, :], k, v, row_mask)
            outputs.append(out_i)
            all_weights.append(w_i)
        heads = torch.cat(outputs, dim=-2)  # (B, H, Tq, d_head)
        weights = torch.cat(all_weights, dim=-2)  # (B, H, Tq, Tk)'''),
        exclusive=True,
        cause="loop over the positions",
    ),
)

BY_NAME = {m.name: m for m in CATALOGUE}
