"""Bonus task `tiled` (hidden): float64, bool and additive masks, Tq != Tk, an explicit scale, rows and
blocks with no allowed key, scores spanning hundreds, every block size, no loop over batch, heads or
queries, and no work on keys that no query can see."""

import pytest
import torch

from tests.support import inputs, oracle
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.efficiency import assert_no_loops, counted, shape_text
from tests.support.feedback import fail
from tests.support.tiled import HINT, OUT_DIMS, assert_close_tiled, multiply_adds_without_and_with_causal, run

pytestmark = pytest.mark.task("tiled")


@pytest.mark.points(1)
def test_tiled_float64_with_an_additive_mask_a_scale_and_tq_different_from_tk(submission):
    """In float64, with an additive [Tq, Tk] mask, Tq < Tk and Tq > Tk, with and without is_causal (and
    an explicit scale), tiled_attention equals torch's SDPA output."""
    for q_len, k_len, causal, scale, salt in ((12, 50, False, None, 410), (50, 12, False, 0.3, 411),
                                               (12, 50, True, 0.3, 412), (50, 12, True, None, 413)):
        q, k, v = inputs.qkv(lead=(2, 2), q_len=q_len, k_len=k_len, d=8, dtype=torch.float64, salt=salt)
        mask = inputs.additive_mask(inputs.random_bool_mask(q_len, k_len, salt=salt), dtype=torch.float64,
                                    salt=salt + 50)
        text = (f"tiled_attention(q [2, 2, {q_len}, 8], k [2, 2, {k_len}, 8], v, mask=float_mask, "
                f"is_causal={causal}, scale={scale}, block_size=8) in float64")
        got = run(submission, text, q, k, v, mask=mask, is_causal=causal, scale=scale, block_size=8)
        assert_close_tiled(got, oracle.output(q, k, v, mask=mask, is_causal=causal, scale=scale), text, OUT_DIMS,
                           hint="a float mask is ADDED to the block's scores (mask[..., s:e]); with is_causal both "
                                "apply; the scale multiplies q . k; keep the inputs' dtype for every running tensor",
                           mistakes={"the float mask is ignored":
                                     oracle.output(q, k, v, is_causal=causal, scale=scale),
                                     "the scale argument is ignored (always 1/sqrt(d))":
                                     oracle.output(q, k, v, mask=mask, is_causal=causal)})


@pytest.mark.points(0.5)
def test_tiled_with_a_bool_mask_and_rows_or_blocks_with_no_allowed_key(submission):
    """A bool mask (True = allowed) is applied block by block; a query row with no allowed key gives zeros
    (not NaN), and a key block in which a row allows nothing leaves that row's running max, sum and output
    unchanged."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=20, k_len=45, d=8, salt=402)
    mask = inputs.random_bool_mask(2, 3, 20, 45, salt=403)
    text = "tiled_attention(q, k, v, mask=bool_mask [2, 3, 20, 45], block_size=16)"
    got = run(submission, text, q, k, v, mask=mask, block_size=16)
    assert_close_tiled(got, oracle.output(q, k, v, mask=mask), text, OUT_DIMS,
                       hint="take the mask's columns s:e for key block [s, e) (mask[..., s:e]) and fill the "
                            "blocked scores with -inf before the exponentials",
                       mistakes={"the bool mask is inverted: True means ALLOWED": oracle.output(q, k, v, mask=~mask),
                                 "the mask is ignored": oracle.output(q, k, v)})
    q, k, v = inputs.qkv(lead=(2, 2), q_len=6, k_len=40, d=8, salt=414)
    mask = inputs.random_bool_mask(2, 2, 6, 40, salt=415)
    mask[:, :, 0, :] = False  # row 0: no key at all
    mask[:, :, 1, :] = False
    mask[:, :, 1, 30:] = True  # row 1: the first three blocks allow nothing
    mask[:, :, 2, 8:24] = False  # row 2: blocks 1 and 2 allow nothing, blocks 0, 3, 4 do
    text = "tiled_attention(q, k, v, mask=bool_mask, block_size=8) with fully blocked rows and blocks"
    got = run(submission, text, q, k, v, mask=mask, block_size=8)
    assert_close_tiled(got, oracle.output(q, k, v, mask=mask), text, OUT_DIMS,
                       hint="where a row's running max is still -inf, subtract 0 instead of it (exp(-inf - -inf) is "
                            "NaN); carry m = max(m, block max) so that a blocked block keeps m; divide by l only "
                            "where l > 0")
    padding = inputs.padding_mask([40, 0], 40)
    text = "tiled_attention(q, k, v, mask=padding_mask [2, 1, 1, 40], block_size=8) where batch item 1 has no key"
    got = run(submission, text, q, k, v, mask=padding, block_size=8)
    assert_close_tiled(got, oracle.output(q, k, v, mask=padding), text, OUT_DIMS,
                       hint="a [B, 1, 1, Tk] mask broadcasts: slice its last dim only; a row with no key gives zeros")


@pytest.mark.points(0.5)
def test_tiled_stays_exact_when_the_scores_span_hundreds(submission):
    """With scores in the hundreds, largest in the first key block, the output is finite and equals torch's:
    the running max never decreases, so every exponent is <= 0."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=24, k_len=64, d=16, salt=416)
    q = q * 12
    k = torch.cat([k[..., :16, :] * 8, k[..., 16:, :]], dim=-2)
    text = "tiled_attention(q, k, v, block_size=16) with scores from about -300 to 300"
    got = run(submission, text, q, k, v, block_size=16)
    bad = ~torch.isfinite(got)
    if bad.any():
        fail(f"{text} has {int(bad.sum())} NaN or inf entries of {bad.numel()}, first at "
             f"{[int(i) for i in bad.nonzero()[0]]}.\nHint: m_new must be max(m, block max), never the block's "
             "own max alone: exp(m - m_new) then stays <= 1 and exp(s - m_new) <= 1, so nothing overflows.")
    assert_close_tiled(got, oracle.output(q, k, v), text, OUT_DIMS, hint=HINT)


@pytest.mark.points(1)
def test_tiled_works_for_every_block_size(submission):
    """block_size 1, 7 (T not a multiple), 20 (= T) and 64 (> T) all give torch's output, with and
    without is_causal."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=20, k_len=20, d=8, salt=417)
    for causal in (False, True):
        expected = oracle.output(q, k, v, is_causal=causal)
        for block_size in (1, 7, 20, 64):
            text = f"tiled_attention(q, k, v, is_causal={causal}, block_size={block_size}) with T = 20"
            got = run(submission, text, q, k, v, is_causal=causal, block_size=block_size)
            assert_close_tiled(got, expected, text, OUT_DIMS,
                               hint="loop with range(0, Tk, block_size) and end = min(start + block_size, Tk): the "
                                    "last block may be shorter, and a block may be larger than T")


@pytest.mark.points(1)
def test_tiled_loops_over_key_blocks_only(submission):
    """tiled_attention returns torch's output and its operation count depends on the number of key blocks
    only, not on B, H or Tq."""
    names = ("B", "H", "Tq", "Tk")
    # Tq > Tk: with is_causal every key block is visible to some query, and some queries lie past every block,
    # so code that treats the rows on a block's diagonal apart from those past it runs the same steps at both Tq
    base_shape = (2, 2, 128, 64)
    grown_shapes = (("the batch", (6, 2, 128, 64)), ("the heads", (2, 8, 128, 64)),
                    ("the query positions", (2, 2, 256, 64)))
    for causal in (False, True):

        def count(shape, salt):
            batch, heads, q_len, k_len = shape
            q, k, v = inputs.qkv(lead=(batch, heads), q_len=q_len, k_len=k_len, d=16, salt=salt)
            text = f"tiled_attention(..., is_causal={causal}, block_size=16) at {shape_text(names, shape)}"
            got, ops = counted(submission, submission.tiled_attention, text, q, k, v, is_causal=causal,
                               block_size=16)
            assert_close_tiled(got, oracle.output(q, k, v, is_causal=causal), text, OUT_DIMS, hint=HINT)
            return ops

        base = count(base_shape, 418)
        grown = [(dim, shape_text(names, shape), count(shape, 419 + n)) for n, (dim, shape) in enumerate(grown_shapes)]
        assert_no_loops(f"tiled_attention(..., is_causal={causal}, block_size=16)",
                        (shape_text(names, base_shape), base), grown,
                        advice="Loop over the key blocks only; let each block's matmul handle every batch item, "
                               "head and query at once.")


@pytest.mark.points(1)
def test_tiled_causal_never_multiplies_keys_that_no_query_can_see(submission):
    """With is_causal=True, Tq = 128 and Tk = 1024, the keys j >= 128 are invisible to every query: the
    matrix products do under a quarter of the multiply-adds of a non-causal call."""
    q, k, v = inputs.qkv(lead=(1, 2), q_len=128, k_len=1024, d=16, salt=420)
    full, causal = multiply_adds_without_and_with_causal(submission, q, k, v)
    if full == 0 or causal > 0.25 * full:
        fail(f"with is_causal=True, Tq = 128 and Tk = 1024 your matrix products did {causal:,} multiply-adds, "
             f"{causal / max(full, 1):.0%} of the {full:,} done without it; only the first 128 keys are visible "
             "to any query, about 9% of the work.\nHint: stop the loop over key blocks once the block starts at "
             "or after Tq (its keys lie above the diagonal for every query).")
