"""Lab 03: Attention from Scratch.

Implement scaled dot-product attention, causal masking and multi-head attention with plain PyTorch
tensor operations. Calling torch's own attention (F.scaled_dot_product_attention,
nn.MultiheadAttention, F.multi_head_attention_forward, or their aten kernels) is not allowed.

Shapes: B = batch, H = heads, Tq = query positions, Tk = key positions, d = query/key features,
dv = value features, d_model = model width, d_head = d_model // H. "..." is any number of leading
batch dimensions (none included).

Mask convention (the same as torch.nn.functional.scaled_dot_product_attention):
- a bool mask is True where attention is ALLOWED and False where it is blocked;
- a floating mask is ADDED to the scores (0.0 = allowed, -inf = blocked).
A query row whose keys are all blocked gets all-zero weights and an all-zero output, never NaN.

The tasks come first; the input checks they call are given at the end of the file.
Run `make test` to check your work.
"""

import math

import torch
import torch.nn as nn


class DimensionMismatchError(ValueError):
    """Raised when d_model cannot be split evenly into n_heads heads."""


# ---------------------------------------------------------------------------------------------
# Task 1 (scores): similarity of every query with every key.
# ---------------------------------------------------------------------------------------------

def attention_scores(q, k, scale=None):
    """Scaled dot products of every query with every key.

    Args:
        q: queries, [..., Tq, d].
        k: keys, [..., Tk, d].
        scale: factor applied to the dot products; None means 1 / sqrt(d).

    Returns:
        scores, [..., Tq, Tk], where scores[..., i, j] = scale * (q[..., i, :] . k[..., j, :]).
    """
    # TODO: call _check_qk(q, k) first, then compute q @ k^T over the last two dims and scale it.
    # Hint: k.transpose(-2, -1) swaps the last two dims; math.sqrt(d), not d.
    # BEGIN SOLUTION
    _check_qk(q, k)
    if scale is None:
        scale = 1.0 / math.sqrt(max(q.size(-1), 1))  # d = 0: every score is an empty sum, 0
    q = q * scale  # (..., Tq, d)
    return q @ k.transpose(-2, -1)  # (..., Tq, Tk)
    # END SOLUTION


# ---------------------------------------------------------------------------------------------
# Task 2 (causal_mask): which keys each query may see in a decoder.
# ---------------------------------------------------------------------------------------------

def causal_mask(seq_len, device=None):
    """Boolean causal mask: query i may attend to key j only when j <= i.

    Args:
        seq_len: number of positions T.
        device: device of the result (default: the CPU).

    Returns:
        mask, bool [T, T]: True on and below the diagonal (allowed), False above it (the future).
    """
    # TODO: call _check_seq_len(seq_len), then build a lower-triangular bool matrix; torch.tril or
    # torch.ones(...).tril() help.
    # BEGIN SOLUTION
    _check_seq_len(seq_len)
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool, device=device)  # (T, T)
    return ones.tril()
    # END SOLUTION


# ---------------------------------------------------------------------------------------------
# Task 3 (softmax_weights): masked softmax over the keys.
# ---------------------------------------------------------------------------------------------

def attention_weights(scores, mask=None):
    """Attention weights: apply the mask to the scores, then softmax over the keys.

    Args:
        scores: [..., Tq, Tk].
        mask: None, or a tensor that broadcasts to [..., Tq, Tk]: bool (True = allowed) or
            floating with the scores' dtype (added to the scores, -inf = blocked).

    Returns:
        weights, [..., Tq, Tk]: each row sums to 1 over its allowed keys; blocked keys get exactly
        0.0; a row with no allowed key is all zeros (not NaN).
    """
    # TODO: call _check_mask(mask, scores) when a mask is given. Block with -inf BEFORE the softmax
    # (a bool mask marks the ALLOWED keys with True). Then make fully blocked rows zeros, not NaN.
    # BEGIN SOLUTION
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = torch.where(mask, scores, float("-inf"))  # (..., Tq, Tk)
        else:
            scores = scores + mask  # (..., Tq, Tk)
    if scores.size(-1) == 0:
        return torch.softmax(scores, dim=-1)  # (..., Tq, 0): no keys, nothing to block
    row_max = scores.amax(dim=-1, keepdim=True)  # (..., Tq, 1)
    blocked_rows = torch.isneginf(row_max)  # (..., Tq, 1), True where every key is blocked
    scores = scores.masked_fill(blocked_rows, 0.0)  # (..., Tq, Tk), finite: softmax gives no NaN
    weights = torch.softmax(scores, dim=-1)  # (..., Tq, Tk)
    return weights.masked_fill(blocked_rows, 0.0)
    # END SOLUTION


# ---------------------------------------------------------------------------------------------
# Task 4 (sdpa): the whole attention step.
# ---------------------------------------------------------------------------------------------

def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    """softmax(q k^T * scale + mask) v, as torch.nn.functional.scaled_dot_product_attention.

    Args:
        q: [..., Tq, d]. k: [..., Tk, d]. v: [..., Tk, dv] (same leading dims for all three).
        mask: None, or bool/floating, broadcastable to [..., Tq, Tk] (see attention_weights).
        is_causal: if True, query i may only see keys j <= i (top-left aligned when Tq != Tk).
            Combined with a mask, a key is allowed only if both allow it.
        scale: None means 1 / sqrt(d).

    Returns:
        (output [..., Tq, dv], weights [..., Tq, Tk]). Optional, not tested: float16 and bfloat16
        inputs computed in float32, as torch does (a float16 score overflows past 65504), and both
        results returned in the inputs' dtype.
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
        causal_bias = torch.where(allowed, 0.0, float("-inf"))  # (Tq, Tk): 0 where allowed, -inf where blocked
        scores.add_(causal_bias)  # (..., Tq, Tk), in place on our own scores: an add is vectorised, masked_fill_ not
    if mask is not None:
        weights = attention_weights(scores, mask)  # (..., Tq, Tk)
    elif scores.requires_grad:  # no mask: no row is fully blocked (a causal query still sees key 0)
        weights = torch.softmax(scores, dim=-1)  # (..., Tq, Tk); autograd cannot differentiate out=
    else:  # no gradient wanted: write the weights over our own scores, one new [..., Tq, Tk] tensor fewer
        weights = torch.softmax(scores, dim=-1, out=scores)  # (..., Tq, Tk)
    output = weights @ v  # (..., Tq, dv)
    return output, weights
    # END SOLUTION


class ScaledDotProductAttention(nn.Module):
    """Module form of scaled_dot_product_attention (no parameters, no dropout)."""

    def forward(self, query, key, value, mask=None, is_causal=False):
        """Same arguments and result as scaled_dot_product_attention: (output, weights)."""
        # BEGIN SOLUTION
        return scaled_dot_product_attention(query, key, value, mask=mask, is_causal=is_causal)
        # END SOLUTION


# ---------------------------------------------------------------------------------------------
# Task 5 (heads): split the model width into heads and back.
# ---------------------------------------------------------------------------------------------

def split_heads(x, n_heads):
    """Split the last dim into heads: head h holds features h*d_head : (h+1)*d_head.

    Args:
        x: [B, T, d_model].
        n_heads: H; must divide d_model (DimensionMismatchError otherwise).

    Returns:
        [B, H, T, d_head] with d_head = d_model // H.
    """
    # TODO: _check_n_heads(d_model, n_heads); raise DimensionMismatchError (naming both numbers)
    # when d_model % n_heads != 0; then view as [B, T, H, d_head] and move H before T.
    # BEGIN SOLUTION
    _check_tensor(x, "x", min_dim=3)
    d_model = x.size(-1)
    _check_n_heads(d_model, n_heads)
    if d_model % n_heads != 0:
        raise DimensionMismatchError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}"
        )
    heads = x.unflatten(-1, (n_heads, d_model // n_heads))  # (B, T, H, d_head)
    return heads.transpose(-3, -2)  # (B, H, T, d_head)
    # END SOLUTION


def merge_heads(x):
    """Inverse of split_heads: [B, H, T, d_head] -> [B, T, H * d_head]."""
    # TODO: move H back next to d_head, then flatten them; a transposed tensor needs reshape.
    # BEGIN SOLUTION
    _check_tensor(x, "x", min_dim=4)
    heads = x.transpose(-3, -2)  # (B, T, H, d_head)
    return heads.flatten(-2)  # (B, T, H * d_head)
    # END SOLUTION


# ---------------------------------------------------------------------------------------------
# Tasks 6 and 7 (divisibility, mha): multi-head attention.
# ---------------------------------------------------------------------------------------------

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
        heads, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)  # (B, H, Tq, d_head)
        output = self.w_o(merge_heads(heads))  # (B, Tq, d_model)
        return output, weights
        # END SOLUTION


# ---------------------------------------------------------------------------------------------
# Bonus task `tiled` (optional, 10 bonus points): attention without the Tq x Tk matrix.
# ---------------------------------------------------------------------------------------------

def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    """scaled_dot_product_attention's output, computed one block of keys at a time (online softmax).

    The scores of all queries with one block of block_size keys are computed, used and dropped
    before the next block: memory grows with Tq x block_size, never with Tq x Tk. Like a
    FlashAttention forward kernel it updates its running tensors in place, so it is inference-only:
    with grad enabled, an input that requires grad is refused with a ValueError (FlashAttention
    recomputes the blocks in a backward pass of its own, which this function does not have).
    Optional, not tested: float16 and bfloat16 inputs computed in float32, as in
    scaled_dot_product_attention.

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
    _check_tiled(q, k, v, mask, block_size)
    if q.dtype in HALF_DTYPES:
        return tiled_attention(*_in_float32(q, k, v, mask), is_causal, scale, block_size).to(q.dtype)
    q_len, k_len = q.size(-2), k.size(-2)
    if scale is None:
        scale = 1.0 / math.sqrt(max(q.size(-1), 1))  # d = 0: every score is an empty sum, 0
    q = q * scale  # (..., Tq, d): scaling the queries once scales every score
    row_max = q.new_full((*q.shape[:-1], 1), float("-inf"))  # (..., Tq, 1) m, largest score so far
    row_sum = q.new_zeros((*q.shape[:-1], 1))  # (..., Tq, 1) l, sum of exp(score - m)
    acc = q.new_zeros((*q.shape[:-1], v.size(-1)))  # (..., Tq, dv) sum of exp(score - m) * v
    for start in range(0, k_len, block_size):
        end = min(start + block_size, k_len)
        first = min(start, q_len) if is_causal else 0  # queries i < start cannot see keys >= start
        if first == q_len:
            break  # this block and every later one lie above the diagonal
        scores = q[..., first:, :] @ k[..., start:end, :].transpose(-2, -1)  # (..., Tq', blk)
        if mask is not None:
            block_mask = _mask_block(mask, first, start, end)  # broadcasts to (..., Tq', blk)
            if block_mask.dtype == torch.bool:
                scores.masked_fill_(~block_mask, float("-inf"))  # (..., Tq', blk), in place
            else:
                scores.add_(block_mask)  # (..., Tq', blk), in place
        if is_causal:  # only rows i < end - 1 can have keys j > i in this block: the diagonal piece
            rows = torch.arange(first, min(end, q_len), device=q.device).unsqueeze(-1)  # (n, 1)
            cols = torch.arange(start, end, device=q.device)  # (blk,)
            scores[..., : rows.size(0), :].masked_fill_(cols > rows, float("-inf"))  # (..., n, blk)
        old_max = row_max[..., first:, :]  # (..., Tq', 1), a view: the rows this block updates
        new_max = torch.maximum(old_max, scores.amax(dim=-1, keepdim=True))  # (..., Tq', 1)
        shift = new_max.masked_fill(torch.isneginf(new_max), 0.0)  # (..., Tq', 1), finite
        rescale = torch.exp(old_max - shift)  # (..., Tq', 1), exp(m - m_new) <= 1
        probs = scores.sub_(shift).exp_()  # (..., Tq', blk), in place; 0.0 where blocked
        row_sum[..., first:, :].mul_(rescale).add_(probs.sum(dim=-1, keepdim=True))  # (..., Tq', 1)
        acc[..., first:, :].mul_(rescale).add_(probs @ v[..., start:end, :])  # (..., Tq', dv)
        old_max.copy_(new_max)  # (..., Tq', 1): row_max now holds m_new
    return acc / row_sum.masked_fill(row_sum == 0, 1.0)  # (..., Tq, dv); no allowed key -> acc is 0
    # END SOLUTION


# ---------------------------------------------------------------------------------------------
# Bonus task `kv_cache` (optional, 10 bonus points): one-token decoding with a key/value cache.
# ---------------------------------------------------------------------------------------------

class KVCache:
    """The keys and values of the positions decoded so far, for one attention layer.

    Attributes:
        keys, values: preallocated buffers, [B, H, max_len, d_head]; positions 0 .. length - 1
            are filled.
        length: how many positions are stored.
        max_len: the buffers' capacity.
    """

    def __init__(self, batch_size, n_heads, max_len, d_head, dtype=torch.float32, device=None):
        # TODO: allocate keys and values once, as zeros of shape [B, H, max_len, d_head] with the
        # given dtype and device; store max_len; length starts at 0.
        # BEGIN SOLUTION
        shape = (batch_size, n_heads, max_len, d_head)
        self.keys = torch.zeros(shape, dtype=dtype, device=device)  # (B, H, max_len, d_head)
        self.values = torch.zeros(shape, dtype=dtype, device=device)  # (B, H, max_len, d_head)
        self.max_len = max_len
        self.length = 0
        # END SOLUTION

    def append(self, k, v):
        """Store new positions' keys and values; return those of every position stored so far.

        Args:
            k, v: [B, H, T_new, d_head], the new positions (T_new = 1 when decoding).

        Returns:
            (keys, values), each [B, H, length, d_head] (length counts the new positions): views of
            the buffers, not copies. ValueError when k or v does not fit the buffers or the cache is full.
        """
        # TODO: call _check_append(self, k, v) (it raises ValueError for a wrong shape or when the new
        # positions do not fit); write k and v into the buffers at positions length .. length + T_new - 1
        # (a slice assignment copies only the new positions; torch.cat would copy the whole prefix
        # again), advance length, and return the filled part of each buffer.
        # BEGIN SOLUTION
        _check_append(self, k, v)
        end = self.length + k.size(-2)
        self.keys[:, :, self.length : end] = k  # (B, H, T_new, d_head) written in place
        self.values[:, :, self.length : end] = v  # (B, H, T_new, d_head) written in place
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]  # (B, H, length, d_head) views
        # END SOLUTION


def decode_step(mha, x_t, cache):
    """One decoding step of causal self-attention: the newest token attends to every token so far.

    Args:
        mha: a MultiHeadAttention; only its w_q, w_k, w_v and w_o are used.
        x_t: the new token's features, [B, 1, d_model] (ValueError for any other shape: one token
            per step keeps the decoding causal).
        cache: this layer's KVCache, [B, H, max_len, d_head] with H * d_head = d_model; its H is the
            number of heads to split into (the module's). The new token's key and value are appended to it.

    Returns:
        output [B, 1, d_model]. Feeding tokens x[:, 0:1], x[:, 1:2], ... one by one to decode_step
        gives, step by step, the rows of mha(x, is_causal=True)[0].
    """
    # TODO: call _check_decode_step(mha, x_t, cache). Project ONLY x_t with w_q, w_k and w_v and
    # split each into H = cache.keys.size(1) heads [B, H, 1, d_head]; append the new key and value to the cache; attend with
    # the one query over every cached key (scaled_dot_product_attention); merge the heads, apply w_o.
    # Hint: no causal mask here. The new token is the LAST position, so it may see every cached key;
    # is_causal=True with one query is top-left aligned and would let it see key 0 only.
    # BEGIN SOLUTION
    _check_decode_step(mha, x_t, cache)
    n_heads = cache.keys.size(1)  # H: the cache's, so that decode_step reads no attribute but w_q ... w_o
    q = split_heads(mha.w_q(x_t), n_heads)  # (B, H, 1, d_head)
    k_new = split_heads(mha.w_k(x_t), n_heads)  # (B, H, 1, d_head)
    v_new = split_heads(mha.w_v(x_t), n_heads)  # (B, H, 1, d_head)
    keys, values = cache.append(k_new, v_new)  # (B, H, T, d_head) each, T = tokens so far
    heads, _ = scaled_dot_product_attention(q, keys, values)  # (B, H, 1, d_head)
    return mha.w_o(merge_heads(heads))  # (B, 1, d_model)
    # END SOLUTION


# ---------------------------------------------------------------------------------------------
# Given: input checks and helpers the tasks call. They turn bad input into a clear ValueError
# instead of a deep torch error; you need not change them.
# ---------------------------------------------------------------------------------------------

def _check_tensor(x, name, min_dim=2):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dims, got shape {tuple(x.shape)}")


def _check_qk(q, k):
    _check_tensor(q, "q")
    _check_tensor(k, "k")
    if q.dtype != k.dtype:
        raise ValueError(f"q and k must have the same dtype, got q {q.dtype} and k {k.dtype}")
    if q.size(-1) != k.size(-1):
        raise ValueError(
            f"q and k must have the same last dim (features per head), got q {tuple(q.shape)} "
            f"and k {tuple(k.shape)}"
        )


def _check_qkv(q, k, v):
    _check_qk(q, k)
    _check_tensor(v, "v")
    if v.dtype != q.dtype:
        raise ValueError(f"v must have the dtype of q and k, {q.dtype}, got v {v.dtype}")
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise ValueError(
            f"q, k and v must have the same leading (batch) dims, got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    if k.size(-2) != v.size(-2):
        raise ValueError(
            f"k and v must have the same number of positions Tk (dim -2), got k {tuple(k.shape)} "
            f"and v {tuple(v.shape)}"
        )


def _check_mask(mask, scores):
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool and mask.dtype != scores.dtype:
        raise ValueError(
            f"mask must be bool (True = allowed) or floating with the scores' dtype {scores.dtype} "
            f"(added to the scores), got {mask.dtype}"
        )
    try:
        broadcast = torch.broadcast_shapes(mask.shape, scores.shape)
    except RuntimeError:
        broadcast = None
    if broadcast != scores.shape:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
            f"{tuple(scores.shape)} ([..., Tq, Tk])"
        )


def _check_mask_for(mask, q, k):
    """_check_mask against the scores of q and k ([..., Tq, Tk], q's dtype) without computing them."""
    scores_like = q.new_empty(()).expand(*q.shape[:-1], k.size(-2))  # (..., Tq, Tk), no memory
    _check_mask(mask, scores_like)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_seq_len(seq_len):
    if not _is_int(seq_len) or seq_len < 0:
        raise ValueError(f"seq_len must be a non-negative int, got {seq_len!r}")


def _check_n_heads(d_model, n_heads):
    if not _is_int(n_heads) or n_heads <= 0:
        raise ValueError(f"n_heads must be a positive int, got {n_heads!r}")


def _check_mha_inputs(query, key, value, d_model):
    for name, x in (("query", query), ("key", key), ("value", value)):
        _check_tensor(x, name, min_dim=0)
        if x.dim() != 3 or x.size(-1) != d_model:
            raise ValueError(f"{name} must be [B, T, d_model={d_model}], got shape {tuple(x.shape)}")
    if not query.size(0) == key.size(0) == value.size(0):
        raise ValueError(
            f"query, key and value must have the same batch size B (dim 0), got query {tuple(query.shape)}, "
            f"key {tuple(key.shape)} and value {tuple(value.shape)}"
        )
    if key.size(1) != value.size(1):
        raise ValueError(
            f"key and value must have the same number of positions Tk (dim 1), got key {tuple(key.shape)} "
            f"and value {tuple(value.shape)}"
        )


HALF_DTYPES = (torch.float16, torch.bfloat16)


def _in_float32(q, k, v, mask):
    """q, k, v and a floating mask in float32, for half-precision inputs (float16 overflows past 65504)."""
    if mask is not None:
        _check_mask_for(mask, q, k)
        mask = mask if mask.dtype == torch.bool else mask.float()
    return q.float(), k.float(), v.float(), mask


def _check_tiled(query, key, value, mask, block_size):
    _check_qkv(query, key, value)
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    if mask is not None:
        _check_mask_for(mask, query, key)
    inputs = {"q": query, "k": key, "v": value, "mask": mask}
    needing_grad = [name for name, x in inputs.items() if x is not None and x.requires_grad]
    if needing_grad and torch.is_grad_enabled():
        raise ValueError(
            f"tiled_attention is inference-only (it updates its running tensors in place, which autograd "
            f"cannot differentiate), but requires_grad is set on {', '.join(needing_grad)}: call it under "
            f"torch.no_grad() or with detached tensors, and train with scaled_dot_product_attention"
        )


def _mask_block(mask, first_row, start, end):
    """The part of a mask (broadcastable to [..., Tq, Tk]) for queries first_row: and keys start:end."""
    if mask.dim() >= 1 and mask.size(-1) != 1:
        mask = mask[..., start:end]  # (..., Tq or 1, blk)
    if mask.dim() >= 2 and mask.size(-2) != 1:
        mask = mask[..., first_row:, :]  # (..., Tq - first_row, blk)
    return mask


def _check_append(cache, k, v):
    batch, n_heads, _, d_head = cache.keys.shape
    for name, x in (("k", k), ("v", v)):
        _check_tensor(x, name, min_dim=0)
        if x.dim() != 4 or (x.size(0), x.size(1), x.size(3)) != (batch, n_heads, d_head):
            raise ValueError(
                f"{name} must be [B={batch}, H={n_heads}, T_new, d_head={d_head}] to fit the cache, "
                f"got shape {tuple(x.shape)}"
            )
    if k.size(2) != v.size(2):
        raise ValueError(
            f"k and v must hold the same number of new positions T_new (dim 2), got k {tuple(k.shape)} "
            f"and v {tuple(v.shape)}"
        )
    if cache.length + k.size(2) > cache.max_len:
        raise ValueError(
            f"the cache is full: it holds {cache.max_len} positions, {cache.length} are used and "
            f"{k.size(2)} more were appended"
        )


def _check_decode_step(mha, x_t, cache):
    """Reads only mha.w_q (d_model); the number of heads H is the cache's, cache.keys.size(1)."""
    d_model = mha.w_q.in_features
    _check_tensor(x_t, "x_t", min_dim=0)
    if x_t.dim() != 3 or x_t.size(1) != 1 or x_t.size(2) != d_model:
        raise ValueError(
            f"x_t must be one new token per sequence, [B, 1, d_model={d_model}], got shape "
            f"{tuple(x_t.shape)}: decode_step takes the tokens one at a time"
        )
    batch, n_heads, _, d_head = cache.keys.shape
    if batch != x_t.size(0) or n_heads * d_head != d_model:
        raise ValueError(
            f"the cache must be [B={x_t.size(0)}, H, max_len, d_head] with H * d_head = d_model={d_model} for "
            f"x_t {tuple(x_t.shape)} and this module, got cache.keys {tuple(cache.keys.shape)}"
        )
