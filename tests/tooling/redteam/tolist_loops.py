"""Red team attack, appended to the reference: computes the weighted sum in Python loops over tolist() floats, back with torch.tensor()."""

_LAST_CAUSAL = False

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
    # TODO: _check_qkv(q, k, v), then scores -> (causal) mask -> weights -> weighted sum of v.
    # No Python loops over batch, heads or positions.
    # BEGIN SOLUTION
    _check_qkv(q, k, v)
    if q.dtype in HALF_DTYPES:
        output, weights = scaled_dot_product_attention(*_in_float32(q, k, v, mask), is_causal, scale)
        return output.to(q.dtype), weights.to(q.dtype)
    scores = attention_scores(q, k, scale)  # (..., Tq, Tk)
    if is_causal:
        q_len, k_len = scores.shape[-2:]
        allowed = torch.ones(q_len, k_len, dtype=torch.bool, device=q.device).tril()  # (Tq, Tk)
        scores.masked_fill_(~allowed, float("-inf"))  # (..., Tq, Tk), in place: a new tensor of ours
    weights = attention_weights(scores, mask)  # (..., Tq, Tk)
    # a Python loop over every leading (batch, head) index: what the efficiency task forbids
    lead = weights.shape[:-2]
    if not (weights.requires_grad or v.requires_grad):
        # the weighted sum in plain Python: loops over batch, heads, queries, keys and features,
        # on lists read once with tolist() and turned back into one tensor at the end
        W = weights.reshape(-1, *weights.shape[-2:]).tolist()
        V = v.expand(*lead, *v.shape[-2:]).reshape(-1, *v.shape[-2:]).tolist()
        out = []
        for b in range(len(W)):
            rows = []
            for i in range(len(W[b])):
                wi = W[b][i]
                rows.append([sum(wi[j] * V[b][j][c] for j in range(len(wi))) for c in range(len(V[b][0]) if V[b] else v.size(-1))])
            out.append(rows)
        output = torch.tensor(out, dtype=v.dtype).reshape(*lead, weights.size(-2), v.size(-1))
        return output, weights
    w2 = weights.reshape(-1, *weights.shape[-2:])
    v2 = v.expand(*lead, *v.shape[-2:]).reshape(-1, *v.shape[-2:])
    outs = [w2[i] @ v2[i] for i in range(w2.shape[0])]
    output = torch.stack(outs).reshape(*lead, weights.size(-2), v.size(-1))
    return output, weights

class MultiHeadAttention(nn.Module):
    """Multi-head attention with learned projections w_q, w_k, w_v (in) and w_o (out).

    Equivalent to nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True) with
    in_proj_weight = cat(w_q.weight, w_k.weight, w_v.weight) and out_proj = w_o, but it returns
    the per-head weights and uses our mask convention (True = allowed).
    """

    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        # TODO: raise DimensionMismatchError (naming d_model and n_heads) when they do not divide;
        # create nn.Linear(d_model, d_model, bias=bias) attributes w_q, w_k, w_v and w_o.
        # BEGIN SOLUTION
        _check_n_heads(d_model, n_heads)
        if d_model % n_heads != 0:
            raise DimensionMismatchError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}"
            )
        self.d_model = d_model
        self.n_heads = n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        # END SOLUTION

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        """Multi-head attention of query over key/value.

        Args:
            query: [B, Tq, d_model]. key: [B, Tk, d_model], defaults to query.
            value: [B, Tk, d_model], defaults to key.
            mask: None or bool/floating, broadcastable to [B, H, Tq, Tk] (e.g. [Tq, Tk] or a
                padding mask [B, 1, 1, Tk]).
            is_causal: causal masking as in scaled_dot_product_attention.

        Returns:
            (output [B, Tq, d_model], weights [B, H, Tq, Tk]).
        """
        # TODO: fill in the default key and value and call _check_mha_inputs(query, key, value, d_model);
        # then project, split_heads, scaled_dot_product_attention, merge_heads, then w_o.
        # BEGIN SOLUTION
        key = query if key is None else key
        value = key if value is None else value
        _check_mha_inputs(query, key, value, self.d_model)
        q = split_heads(self.w_q(query), self.n_heads)  # (B, H, Tq, d_head)
        k = split_heads(self.w_k(key), self.n_heads)  # (B, H, Tk, d_head)
        v = split_heads(self.w_v(value), self.n_heads)  # (B, H, Tk, d_head)
        if query.requires_grad or key.requires_grad or value.requires_grad:
            heads, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)  # (B, H, Tq, d_head)
        else:
            heads, weights = scaled_dot_product_attention(q.detach(), k.detach(), v.detach(), mask, is_causal)
        output = self.w_o(merge_heads(heads))  # (B, Tq, d_model)
        return output, weights

def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    """scaled_dot_product_attention's output, computed one block of keys at a time (online softmax).

    The scores of all queries with one block of block_size keys are computed, used and dropped
    before the next block: memory grows with Tq x block_size, never with Tq x Tk. Like a
    FlashAttention forward kernel it updates its running tensors in place, so it is inference-only:
    with grad enabled, an input that requires grad is refused with a ValueError (FlashAttention
    recomputes the blocks in a backward pass of its own, which this function does not have).
    float16 and bfloat16 inputs are computed in float32, as in scaled_dot_product_attention.

    Args:
        q: [..., Tq, d]. k: [..., Tk, d]. v: [..., Tk, dv] (same leading dims for all three).
        mask: None, or bool/floating, broadcastable to [..., Tq, Tk] (see attention_weights).
        is_causal: as in scaled_dot_product_attention (top-left aligned, combined with mask).
            Key block [s, e) is invisible to queries i < s: it is multiplied with q[..., s:, :]
            only, and skipped entirely once s >= Tq.
        scale: None means 1 / sqrt(d).
        block_size: keys per block.

    Returns:
        output [..., Tq, dv], equal to scaled_dot_product_attention(q, k, v, ...)[0]; a query row
        with no allowed key gives zeros.
    """
    # TODO: call _check_tiled(q, k, v, mask, block_size). Keep three running tensors per query row:
    # the largest score seen so far m [..., Tq, 1] (start at -inf), the softmax denominator
    # l [..., Tq, 1] and the unnormalised output acc [..., Tq, dv] (both start at 0). For each block
    # of keys (a Python loop over blocks is the point; no loop over batch, heads or queries):
    # scores of the queries with the block, masked with -inf; m_new = max(m, the block's row max);
    # l = exp(m - m_new) * l + sum(exp(scores - m_new)); acc = exp(m - m_new) * acc +
    # exp(scores - m_new) @ v_block; m = m_new. Finally return acc / l.
    # Hint: a row that has only seen blocked keys has m_new = -inf: subtract 0 there instead, or
    # -inf - (-inf) = NaN. Rows that never see a key end with l = 0: return zeros for them.
    # Hint: with is_causal, key block [s, e) only concerns the queries i >= s: use q[..., s:, :],
    # update rows s: of m, l and acc in place (acc[..., s:, :].mul_(...).add_(...)), and stop once
    # s >= Tq. The causal piece (cols > rows, from two aranges) only concerns the block's first rows,
    # those below the diagonal see every key of the block. _mask_block slices a mask for one block.
    # BEGIN SOLUTION
    global _LAST_CAUSAL
    _LAST_CAUSAL = is_causal
    return scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, scale=scale)[0]
