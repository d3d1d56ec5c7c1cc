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

Run `make test` to check your work.
"""

import math

import torch
import torch.nn as nn


class DimensionMismatchError(ValueError):
    """Raised when d_model cannot be split evenly into n_heads heads."""


# ---------------------------------------------------------------------------------------------
# Input checks (given). They turn bad input into a clear ValueError instead of a deep torch error.
# ---------------------------------------------------------------------------------------------

def _check_tensor(x, name, min_dim=2):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dims, got shape {tuple(x.shape)}")


def _check_qk(q, k):
    _check_tensor(q, "q")
    _check_tensor(k, "k")
    if q.size(-1) != k.size(-1):
        raise ValueError(
            f"q and k must have the same last dim (features per head), got q {tuple(q.shape)} "
            f"and k {tuple(k.shape)}"
        )


def _check_qkv(q, k, v):
    _check_qk(q, k)
    _check_tensor(v, "v")
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


def _check_n_heads(d_model, n_heads):
    if not isinstance(n_heads, int) or n_heads <= 0:
        raise ValueError(f"n_heads must be a positive int, got {n_heads!r}")


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
    raise NotImplementedError("attention_scores is not implemented yet")


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
    # TODO: a lower-triangular bool matrix; torch.tril or torch.ones(...).tril() help.
    raise NotImplementedError("causal_mask is not implemented yet")


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
    raise NotImplementedError("attention_weights is not implemented yet")


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
        (output [..., Tq, dv], weights [..., Tq, Tk]).
    """
    # TODO: _check_qkv(q, k, v), then scores -> (causal) mask -> weights -> weighted sum of v.
    # No Python loops over batch, heads or positions.
    raise NotImplementedError("scaled_dot_product_attention is not implemented yet")


class ScaledDotProductAttention(nn.Module):
    """Module form of scaled_dot_product_attention (no parameters, no dropout)."""

    def forward(self, query, key, value, mask=None, is_causal=False):
        """Same arguments and result as scaled_dot_product_attention: (output, weights)."""
        raise NotImplementedError("ScaledDotProductAttention.forward is not implemented yet")


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
    raise NotImplementedError("split_heads is not implemented yet")


def merge_heads(x):
    """Inverse of split_heads: [B, H, T, d_head] -> [B, T, H * d_head]."""
    # TODO: move H back next to d_head, then flatten them; a transposed tensor needs reshape.
    raise NotImplementedError("merge_heads is not implemented yet")


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
        raise NotImplementedError("MultiHeadAttention.__init__ is not implemented yet")

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
        # TODO: project, split_heads, scaled_dot_product_attention, merge_heads, then w_o.
        raise NotImplementedError("MultiHeadAttention.forward is not implemented yet")
