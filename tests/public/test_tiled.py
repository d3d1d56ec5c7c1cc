"""Bonus task `tiled`: tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64)
returns scaled_dot_product_attention's output, computed one block of keys at a time (online softmax)."""

import pytest
import torch

from tests.support import inputs, oracle
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import fail
from tests.support.tiled import (
    HINT,
    OUT_DIMS,
    assert_close_tiled,
    multiply_adds_without_and_with_causal,
    run,
    run_measured,
)

pytestmark = pytest.mark.task("tiled")
MIB = 2 ** 20


def block_slips(q, k, v, block_size):
    """{explanation: output} of tiled attention with a classic slip (no mask, not causal)."""
    scale = q.size(-1) ** -0.5

    def blockwise(rescale_sum=True, rescale_output=True, drop_block_ends=False):
        top = torch.full((*q.shape[:-1], 1), float("-inf"), dtype=q.dtype)
        total = torch.zeros(*q.shape[:-1], 1, dtype=q.dtype)
        numerator = torch.zeros(*q.shape[:-1], v.size(-1), dtype=q.dtype)
        for first_key in range(0, k.size(-2), block_size):
            last_key = min(first_key + block_size - (1 if drop_block_ends else 0), k.size(-2))
            part = (q @ k[..., first_key:last_key, :].transpose(-2, -1)) * scale
            if part.size(-1) == 0:
                continue
            top_new = torch.maximum(top, part.amax(-1, keepdim=True))
            decay = (top - top_new).exp()
            weights = (part - top_new).exp()
            total = (decay * total if rescale_sum else total) + weights.sum(-1, keepdim=True)
            numerator = (decay * numerator if rescale_output else numerator) + weights @ v[..., first_key:last_key, :]
            top = top_new
        return numerator / total

    return {
        "the running sum l is not rescaled by exp(m - m_new) when the running max grows": blockwise(rescale_sum=False),
        "the running output acc is not rescaled by exp(m - m_new) when the running max grows":
            blockwise(rescale_output=False),
        "neither the running sum l nor the output acc is rescaled by exp(m - m_new) when the running max grows":
            blockwise(rescale_sum=False, rescale_output=False),
        "the last key of every full block is skipped: block [s, e) covers keys s .. e - 1, "
        "with e = min(s + block_size, Tk)": blockwise(drop_block_ends=True),
    }


@pytest.mark.points(1)
def test_tiled_matches_torch_without_a_mask(submission):
    """tiled_attention(q, k, v, block_size=32) equals torch's SDPA output, with Tk = 100 not a multiple of 32."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=100, k_len=100, d=16, dv=12, salt=400)
    text = "tiled_attention(q, k, v, block_size=32) with Tq = Tk = 100"
    got = run(submission, text, q, k, v, block_size=32)
    assert_close_tiled(got, oracle.output(q, k, v), text, OUT_DIMS, layout="[B, H, Tq, dv]", hint=HINT,
                       mistakes=block_slips(q, k, v, 32))


@pytest.mark.points(1)
def test_tiled_matches_torch_with_is_causal(submission):
    """With is_causal=True (top-left aligned, as torch's), tiled_attention equals torch's SDPA output."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=70, k_len=70, d=8, salt=401)
    text = "tiled_attention(q, k, v, is_causal=True, block_size=16) with T = 70"
    got = run(submission, text, q, k, v, is_causal=True, block_size=16)
    wrong_diagonal = torch.ones(70, 70, dtype=torch.bool).tril(-1)
    assert_close_tiled(got, oracle.output(q, k, v, is_causal=True), text, OUT_DIMS,
                       hint="inside key block [s, e), query i may see key j only when j <= i: block the piece "
                            "where the key positions (arange(s, e)) exceed the query positions",
                       mistakes={"each query's own key (the diagonal) is blocked: allow j <= i, block only j > i":
                                 oracle.output(q, k, v, mask=wrong_diagonal),
                                 "the causal mask is ignored": oracle.output(q, k, v)})


@pytest.mark.points(1)
def test_tiled_never_creates_a_tq_by_tk_matrix(submission):
    """At B=1, H=2, T=1024, d=16 and block_size=64, tiled_attention returns torch's output and nothing it
    creates is larger than a few [B, H, Tq, block_size] blocks (without and with is_causal)."""
    q, k, v = inputs.qkv(lead=(1, 2), q_len=1024, k_len=1024, d=16, salt=404)
    full = 1 * 2 * 1024 * 1024 * 4
    block = 1 * 2 * 1024 * 64 * 4
    for causal in (False, True):
        text = f"tiled_attention(q, k, v, is_causal={causal}, block_size=64) at B=1, H=2, T=1024, d=16"
        got, measured = run_measured(submission, text, q, k, v, is_causal=causal, block_size=64)
        largest = measured.largest_bytes
        assert_close_tiled(got, oracle.output(q, k, v, is_causal=causal), text, OUT_DIMS, hint=HINT)
        if largest > 4 * block:
            fail(f"{text}: your largest intermediate was {largest / MIB:.2f} MiB; a Tq x Tk score matrix is "
                 f"{full / MIB:.0f} MiB and one [B, H, Tq, block_size] block of scores {block / MIB:.2f} MiB "
                 f"(allowed: up to {4 * block / MIB:.0f} MiB).\nLikely cause: a [Tq, Tk]-sized tensor (scores, "
                 "weights or a mask) is built.\nHint: compute the scores of one key block at a "
                 "time and build any mask piece for that block only (mask[..., s:e], or aranges for is_causal); "
                 "never a [Tq, Tk] tensor, not even a bool causal mask.")


@pytest.mark.points(1)
def test_tiled_causal_skips_the_blocks_above_the_diagonal(submission):
    """With is_causal=True, tiled_attention returns torch's output and its matrix products do about half
    the multiply-adds of a non-causal call (B=1, H=2, T=1024, block_size=64): keys above the diagonal are
    never multiplied."""
    q, k, v = inputs.qkv(lead=(1, 2), q_len=1024, k_len=1024, d=16, salt=405)
    full, causal = multiply_adds_without_and_with_causal(submission, q, k, v)
    if full == 0:
        fail("tiled_attention ran no matrix product (matmul, @, einsum, bmm): compute each block's scores "
             "and its weighted sum of values with them.")
    if causal > 0.65 * full:
        fail(f"with is_causal=True your matrix products did {causal:,} multiply-adds, {causal / full:.0%} of the "
             f"{full:,} done without it; skipping the keys above the diagonal brings it to about 53%.\n"
             "Likely cause: is_causal masks the scores but does not skip the work above the diagonal: queries "
             "i < s cannot see any key of block [s, e), so multiply that block with q[..., s:, :] only, and stop "
             "once s >= Tq.")


@pytest.mark.points(1)
def test_tiled_with_scores_in_the_hundreds_and_blocked_rows_and_blocks(submission):
    """Scores in the hundreds (largest in a late block), a first key block that no query may see, and a query row
    with no allowed key: the output is finite and equals torch's (zeros for that row), without and with is_causal
    (with is_causal the first rows see no key at all)."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=21, k_len=45, d=12, dv=5, salt=406)
    q = q * 9
    k = torch.cat([k[..., :32, :], k[..., 32:, :] * 7], dim=-2)  # the largest scores come last
    mask = inputs.random_bool_mask(2, 1, 21, 45, salt=407)
    mask[..., :11] = False  # key block 0 (block_size 11): no query may see it
    mask[..., 4, :] = False  # query 4 sees no key at all
    for causal in (False, True):
        text = (f"tiled_attention(q, k, v, mask=bool_mask [2, 1, 21, 45], is_causal={causal}, block_size=11) with "
                "scores from about -210 to 240, key block 0 blocked and query 4 blocked")
        got = run(submission, text, q, k, v, mask=mask, is_causal=causal, block_size=11)
        allowed = mask & torch.ones(21, 45, dtype=torch.bool).tril() if causal else mask
        assert_close_tiled(got, oracle.output(q, k, v, mask=mask, is_causal=causal), text, OUT_DIMS,
                           blocked=~allowed.any(-1, keepdim=True),
                           hint="m' = max(m, block max), never the block's own max alone; where m' is still -inf "
                                "(only blocked keys so far) subtract 0 instead (-inf - -inf is NaN); divide by l only "
                                "where l > 0")
