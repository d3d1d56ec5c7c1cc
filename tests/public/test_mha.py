"""Task `mha`: MultiHeadAttention(d_model, n_heads, bias=True), each call against nn.MultiheadAttention
with the same weights."""

import pytest
import torch

from tests.support import inputs, mha, oracle
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.mha import classic_mistakes

pytestmark = pytest.mark.task("mha")


def cross_inputs(q_len, k_len, salt, d_model=16, dtype=torch.float32):
    """query [2, Tq, d_model], key and value [2, Tk, d_model], three different tensors."""
    query = inputs.randn(2, q_len, d_model, dtype=dtype, salt=salt)
    key = inputs.randn(2, k_len, d_model, dtype=dtype, salt=salt + 1)
    value = inputs.randn(2, k_len, d_model, dtype=dtype, salt=salt + 2)
    return query, key, value


@pytest.mark.points(2)
def test_mha_self_attention_matches_torch(submission):
    """The module has nn.Linear(d_model, d_model) layers w_q, w_k, w_v, w_o; forward(x) returns output
    [B, T, d_model] and per-head weights [B, H, T, T] equal to nn.MultiheadAttention's, the same twice."""
    mha.check_projections(submission, 16, 4)
    module, params = mha.build(submission, 16, 4, seed=1)
    x = inputs.randn(2, 6, 16, salt=41)
    got = mha.run_twice(module, "MultiHeadAttention(16, 4)(x [2, 6, 16])", x)
    mha.compare(submission, got, oracle.mha(params, 4, x), "mha(x)", mistakes=classic_mistakes(params, 4, x))


@pytest.mark.points(2)
def test_mha_cross_attention_matches_torch(submission):
    """forward(query [B, Tq, d], key [B, Tk, d], value [B, Tk, d]) with Tq != Tk and three different
    tensors projects query with w_q, key with w_k and value with w_v."""
    module, params = mha.build(submission, 24, 3, seed=3)
    query, key, value = cross_inputs(4, 7, salt=43, d_model=24)
    text = "MultiHeadAttention(24, 3)(query [2, 4, 24], key [2, 7, 24], value [2, 7, 24])"
    got = mha.run(module, text, query, key, value)
    mha.compare(submission, got, oracle.mha(params, 3, query, key, value), text,
                hint="project query with w_q, key with w_k and value with w_v",
                mistakes=classic_mistakes(params, 3, query, key, value))


@pytest.mark.points(1)
def test_mha_with_a_bool_mask_matches_torch(submission):
    """A bool [Tq, Tk] mask (True = allowed) applies to every batch item and head (cross-attention)."""
    module, params = mha.build(submission, 16, 4, seed=4)
    query, key, value = cross_inputs(5, 6, salt=44)
    mask = inputs.random_bool_mask(5, 6, salt=47)
    text = "mha(query [2, 5, 16], key [2, 6, 16], value, mask=bool_mask [5, 6])"
    got = mha.run(module, text, query, key, value, mask=mask)
    mha.compare(submission, got, oracle.mha(params, 4, query, key, value, mask=mask), text,
                hint="pass the mask on to scaled_dot_product_attention; True = allowed",
                mistakes=classic_mistakes(params, 4, query, key, value, mask=mask))


@pytest.mark.points(1)
def test_mha_keeps_a_float_mask_additive(submission):
    """A floating [Tq, Tk] mask passed by position, forward(query, key, value, mask), is added to every head's
    scores: its finite values shift them, -inf blocks (it is not turned into a bool mask)."""
    module, params = mha.build(submission, 16, 4, seed=8)
    query, key, value = cross_inputs(5, 6, salt=52)
    mask = inputs.additive_mask(inputs.random_bool_mask(5, 6, salt=55), salt=56) * 3
    text = "mha(query [2, 5, 16], key [2, 6, 16], value, float_mask [5, 6]) (the mask by position)"
    got = mha.run(module, text, query, key, value, mask)
    mha.compare(submission, got, oracle.mha(params, 4, query, key, value, mask=mask), text,
                hint="pass the float mask on unchanged: it is ADDED to the scores",
                mistakes=classic_mistakes(params, 4, query, key, value, mask=mask) | {
                    "the float mask was turned into a bool mask (finite as allowed): a float mask is ADDED to the "
                    "scores, its finite values shift them":
                    oracle.mha_via_sdpa(params, 4, query, key, value, mask=torch.isfinite(mask))})


@pytest.mark.points(1)
def test_mha_causal_self_attention_matches_torch(submission):
    """forward(x, is_causal=True) equals nn.MultiheadAttention with a causal mask."""
    module, params = mha.build(submission, 16, 4, seed=2)
    x = inputs.randn(2, 6, 16, salt=42)
    text = "mha(x [2, 6, 16], is_causal=True)"
    got = mha.run(module, text, x, is_causal=True)
    mha.compare(submission, got, oracle.mha(params, 4, x, is_causal=True), text,
                hint="pass is_causal on to scaled_dot_product_attention",
                mistakes=classic_mistakes(params, 4, x, is_causal=True))


@pytest.mark.points(1)
def test_mha_value_defaults_to_key(submission):
    """forward(query, key) uses key as the value too."""
    module, params = mha.build(submission, 12, 2, seed=7)
    query, key = inputs.randn(3, 4, 12, salt=50), inputs.randn(3, 4, 12, salt=51)
    text = "MultiHeadAttention(12, 2)(query [3, 4, 12], key [3, 4, 12]) (no value)"
    got = mha.run(module, text, query, key)
    mha.compare(submission, got, oracle.mha(params, 2, query, key), text,
                hint="value = key if value is None else value (after key's own default)",
                mistakes=classic_mistakes(params, 2, query, key))


@pytest.mark.points(1)
def test_mha_without_bias_matches_torch(submission):
    """MultiHeadAttention(d_model, H, bias=False) has no biases (w_q.bias is None, ...) and matches torch."""
    mha.check_projections(submission, 16, 2, bias=False)
    module, params = mha.build(submission, 16, 2, bias=False, seed=5)
    x = inputs.randn(2, 5, 16, salt=48)
    text = "MultiHeadAttention(16, 2, bias=False)(x [2, 5, 16])"
    got = mha.run(module, text, x)
    mha.compare(submission, got, oracle.mha(params, 2, x, bias=False), text,
                mistakes=classic_mistakes(params, 2, x))


@pytest.mark.points(1)
def test_mha_in_float64_stays_float64_and_matches_torch(submission):
    """After module.double(), float64 inputs give float64 results equal to torch's at double precision."""
    module, params = mha.build(submission, 16, 4, dtype=torch.float64, seed=6)
    query, key, value = cross_inputs(3, 5, salt=49, dtype=torch.float64)
    text = "MultiHeadAttention(16, 4).double()(query, key, value) in float64"
    got = mha.run(module, text, query, key, value)
    mha.compare(submission, got, oracle.mha(params, 4, query, key, value), text,
                hint="keep the inputs' dtype (no .float()); compute the scale with math.sqrt",
                mistakes=classic_mistakes(params, 4, query, key, value))
