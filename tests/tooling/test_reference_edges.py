"""Edge cases of the reference found by running it against peer test suites (CS336's attention tests,
PyTorch's SDPA tests, nn.MultiheadAttention equivalence): each one behaves as torch does, or fails
with a clear error that names the argument."""

import re

import pytest
import torch
import torch.nn.functional as F

from instructor.figures import load_attention
from instructor.stubs import SOLUTION_FILE


@pytest.fixture(scope="module")
def ref():
    return load_attention(SOLUTION_FILE)


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def test_float16_scores_beyond_65504_give_torchs_output_not_nan(ref):
    x = torch.full((1, 32, 23, 80), 256.0, dtype=torch.half)  # every score is 256 * 256 * sqrt(80) > 65504
    output, weights = ref.scaled_dot_product_attention(x, x, x)
    torch.testing.assert_close(output, F.scaled_dot_product_attention(x, x, x), atol=0, rtol=0)
    assert output.dtype == weights.dtype == torch.half
    torch.testing.assert_close(weights, torch.full_like(weights, 1 / 23), atol=1e-3, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_with_a_float_mask_and_is_causal_matches_torch(ref, dtype):
    q, k, v = (randn(2, 3, 6, 8, seed=seed).to(dtype) for seed in range(3))
    mask = randn(6, 6, seed=3).to(dtype)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask + torch.ones(6, 6).tril().log().to(dtype))
    output, _ = ref.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=True)
    torch.testing.assert_close(output, expected, atol=2e-2, rtol=1e-2)


def test_half_precision_rejects_a_mask_of_another_floating_dtype(ref):
    q = randn(2, 4, 8).half()
    with pytest.raises(ValueError, match=r"mask must be bool .* torch\.float16 .* got torch\.float32"):
        ref.scaled_dot_product_attention(q, q, q, mask=torch.zeros(4, 4))


def test_tiled_attention_in_float16_stays_finite_like_sdpa(ref):
    x = torch.full((1, 2, 23, 80), 256.0, dtype=torch.half)
    output = ref.tiled_attention(x, x, x, block_size=8)
    torch.testing.assert_close(output, F.scaled_dot_product_attention(x, x, x), atol=0, rtol=0)


@pytest.mark.parametrize("shape", [(1, 2, 16), (1, 0, 16), (1, 16), (1, 1, 8)])
def test_decode_step_refuses_anything_but_one_token_of_d_model_features(ref, shape):
    mha = ref.MultiHeadAttention(16, 2)
    with pytest.raises(ValueError, match=re.escape(f"x_t must be one new token per sequence, [B, 1, d_model=16], "
                                                   f"got shape {shape}")):
        ref.decode_step(mha, torch.randn(shape), ref.KVCache(1, 2, 4, 8))


@pytest.mark.parametrize("cache_shape", [(1, 3, 4, 4), (1, 2, 4, 4), (2, 2, 4, 8)])
def test_decode_step_refuses_a_cache_that_does_not_fit_the_module(ref, cache_shape):
    mha = ref.MultiHeadAttention(16, 2)
    with pytest.raises(ValueError, match=re.escape("the cache must be [B=1, H, max_len, d_head] with H * d_head = "
                                                   "d_model=16")):
        ref.decode_step(mha, torch.randn(1, 1, 16), ref.KVCache(*cache_shape))


def test_tiled_attention_refuses_inputs_that_require_grad(ref):
    q = randn(1, 2, 8, 4).requires_grad_()
    k, v = randn(1, 2, 8, 4, seed=1), randn(1, 2, 8, 4, seed=2)
    with pytest.raises(ValueError, match=r"inference-only .* requires_grad is set on q: call it under torch.no_grad\(\)"):
        ref.tiled_attention(q, k, v)


def test_tiled_attention_names_every_input_that_requires_grad(ref):
    q, k, v = (randn(1, 2, 8, 4, seed=seed).requires_grad_() for seed in range(3))
    mask = torch.zeros(8, 8, requires_grad=True)
    with pytest.raises(ValueError, match="requires_grad is set on q, k, v, mask"):
        ref.tiled_attention(q, k, v, mask=mask)


def test_tiled_attention_runs_under_no_grad_on_inputs_that_require_grad(ref):
    q, k, v = (randn(1, 2, 8, 4, seed=seed).requires_grad_() for seed in range(3))
    with torch.no_grad():
        output = ref.tiled_attention(q, k, v, block_size=3)
        expected = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(output, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("allowed", [True, False])
def test_tiled_attention_broadcasts_a_0d_bool_mask(ref, allowed):
    q, k, v = (randn(2, 5, 4, seed=seed) for seed in range(3))
    mask = torch.tensor(allowed)
    expected = ref.scaled_dot_product_attention(q, k, v, mask=mask)[0]
    torch.testing.assert_close(ref.tiled_attention(q, k, v, mask=mask, block_size=2), expected)
    if allowed:
        torch.testing.assert_close(expected, F.scaled_dot_product_attention(q, k, v), atol=1e-5, rtol=1e-5)


def test_tiled_attention_adds_a_0d_float_mask(ref):
    q, k, v = (randn(2, 5, 4, seed=seed) for seed in range(3))
    output = ref.tiled_attention(q, k, v, mask=torch.tensor(-3.0), block_size=2)
    torch.testing.assert_close(output, F.scaled_dot_product_attention(q, k, v), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtypes, message", [
    ((torch.float32, torch.float16, torch.float16), "q and k must have the same dtype, got q torch.float32 and k torch.float16"),
    ((torch.float32, torch.float32, torch.float64), "v must have the dtype of q and k, torch.float32, got v torch.float64"),
])
@pytest.mark.parametrize("function", ["scaled_dot_product_attention", "tiled_attention"])
def test_mixed_dtypes_raise_a_value_error_naming_them(ref, function, dtypes, message):
    q, k, v = (randn(2, 4, 8, seed=seed).to(dtype) for seed, dtype in enumerate(dtypes))
    with pytest.raises(ValueError, match=re.escape(message)):
        getattr(ref, function)(q, k, v)


def test_attention_scores_rejects_q_and_k_of_different_dtypes(ref):
    with pytest.raises(ValueError, match="q and k must have the same dtype"):
        ref.attention_scores(randn(2, 4, 8), randn(2, 4, 8, dtype=torch.float64))


@pytest.mark.parametrize("function", ["scaled_dot_product_attention", "tiled_attention"])
def test_zero_features_give_the_mean_of_v_as_torch_does(ref, function):
    q, k, v = randn(2, 3, 5, 0), randn(2, 3, 7, 0), randn(2, 3, 7, 4, seed=1)
    result = getattr(ref, function)(q, k, v)
    output = result[0] if isinstance(result, tuple) else result
    expected = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(expected, v.mean(-2, keepdim=True).expand(2, 3, 5, 4))
    torch.testing.assert_close(output, expected)


def test_zero_features_with_is_causal_match_torch(ref):
    q, k, v = randn(2, 5, 0), randn(2, 5, 0), randn(2, 5, 3, seed=1)
    output, _ = ref.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(output, F.scaled_dot_product_attention(q, k, v, is_causal=True))


@pytest.mark.parametrize("seq_len", [True, False, 2.0, -1, "3"])
def test_causal_mask_rejects_anything_but_a_non_negative_int(ref, seq_len):
    with pytest.raises(ValueError, match=re.escape(f"seq_len must be a non-negative int, got {seq_len!r}")):
        ref.causal_mask(seq_len)


def test_a_bool_head_count_is_rejected(ref):
    with pytest.raises(ValueError, match="n_heads must be a positive int, got True"):
        ref.MultiHeadAttention(8, True)


@pytest.mark.parametrize("key_shape, value_shape, message", [
    ((2, 4, 6), None, "key must be [B, T, d_model=8], got shape (2, 4, 6)"),
    ((2, 4, 8), (2, 4, 6), "value must be [B, T, d_model=8], got shape (2, 4, 6)"),
    ((2, 4, 8, 1), None, "key must be [B, T, d_model=8], got shape (2, 4, 8, 1)"),
    ((3, 4, 8), None, "query, key and value must have the same batch size B (dim 0)"),
    ((2, 4, 8), (2, 3, 8), "key and value must have the same number of positions Tk (dim 1)"),
])
def test_mha_checks_key_and_value_against_the_query(ref, key_shape, value_shape, message):
    mha = ref.MultiHeadAttention(8, 2)
    value = None if value_shape is None else torch.randn(value_shape)
    with pytest.raises(ValueError, match=re.escape(message)):
        mha(torch.randn(2, 5, 8), torch.randn(key_shape), value)


@pytest.mark.parametrize("shape", [(2, 5, 6), (5, 8)])
def test_mha_names_a_query_of_the_wrong_shape(ref, shape):
    with pytest.raises(ValueError, match=re.escape(f"query must be [B, T, d_model=8], got shape {shape}")):
        ref.MultiHeadAttention(8, 2)(torch.randn(shape))


def test_mha_names_a_key_that_is_not_a_tensor(ref):
    with pytest.raises(TypeError, match="key must be a torch.Tensor, got list"):
        ref.MultiHeadAttention(8, 2)(torch.randn(2, 5, 8), [[0.0] * 8])


@pytest.mark.parametrize("k_shape, v_shape, message", [
    ((1, 2, 1, 5), (1, 2, 1, 4), "k must be [B=1, H=2, T_new, d_head=4] to fit the cache, got shape (1, 2, 1, 5)"),
    ((1, 3, 1, 4), (1, 3, 1, 4), "k must be [B=1, H=2, T_new, d_head=4] to fit the cache, got shape (1, 3, 1, 4)"),
    ((2, 2, 1, 4), (2, 2, 1, 4), "k must be [B=1, H=2, T_new, d_head=4] to fit the cache, got shape (2, 2, 1, 4)"),
    ((1, 2, 1, 4), (1, 2, 4), "v must be [B=1, H=2, T_new, d_head=4] to fit the cache, got shape (1, 2, 4)"),
    ((1, 2, 1, 4), (1, 2, 2, 4), "k and v must hold the same number of new positions T_new (dim 2)"),
    ((1, 2, 4, 4), (1, 2, 4, 4), "the cache is full: it holds 3 positions, 0 are used and 4 more were appended"),
])
def test_kv_cache_append_checks_the_new_positions_fit(ref, k_shape, v_shape, message):
    cache = ref.KVCache(1, 2, 3, 4)
    with pytest.raises(ValueError, match=re.escape(message)):
        cache.append(torch.randn(k_shape), torch.randn(v_shape))
    assert cache.length == 0


def test_kv_cache_refuses_the_token_past_max_len_and_keeps_its_contents(ref):
    cache = ref.KVCache(1, 2, 3, 4)
    for _ in range(3):
        cache.append(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 4))
    keys = cache.keys.clone()
    with pytest.raises(ValueError, match="the cache is full: it holds 3 positions, 3 are used and 1 more"):
        cache.append(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 4))
    assert cache.length == 3
    assert torch.equal(cache.keys, keys)
