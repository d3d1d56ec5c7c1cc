"""Task `mha` (hidden): cross-attention, masks, is_causal with Tq != Tk, float64, bias=False, defaults,
fully blocked rows and determinism, each against torch with the same weights."""

import pytest
import torch

from tests.support import inputs, mha, oracle
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import assert_close
from tests.support.mha import classic_mistakes

pytestmark = pytest.mark.task("mha")
H = 4


def cross_inputs(q_len, k_len, salt, d_model=16, dtype=torch.float32, distinct_value=True):
    query = inputs.randn(2, q_len, d_model, dtype=dtype, salt=salt)
    key = inputs.randn(2, k_len, d_model, dtype=dtype, salt=salt + 1)
    value = inputs.randn(2, k_len, d_model, dtype=dtype, salt=salt + 2) if distinct_value else None
    return query, key, value


@pytest.mark.points(1)
def test_mha_cross_attention_with_more_keys_than_queries(submission):
    """forward(query [B, Tq, d], key [B, Tk, d], value [B, Tk, d]) with Tq < Tk equals torch's."""
    module, params = mha.build(submission, 20, 5, seed=11)
    query, key, value = cross_inputs(3, 9, salt=180, d_model=20)
    text = "MultiHeadAttention(20, 5)(query [2, 3, 20], key [2, 9, 20], value [2, 9, 20])"
    got = mha.run(module, text, query, key, value)
    mha.compare(submission, got, oracle.mha(params, 5, query, key, value), text,
                hint="project query with w_q, key with w_k and value with w_v",
                mistakes=classic_mistakes(params, 5, query, key, value))


@pytest.mark.points(1)
def test_mha_with_a_bool_mask_matches_torch(submission):
    """A bool [Tq, Tk] mask (True = allowed) applies to every batch item and head."""
    module, params = mha.build(submission, 16, H, seed=12)
    query, key, value = cross_inputs(7, 3, salt=183)
    mask = inputs.random_bool_mask(7, 3, salt=186)
    text = "mha(query [2, 7, 16], key [2, 3, 16], value, mask=bool_mask [7, 3])"
    got = mha.run(module, text, query, key, value, mask=mask)
    mha.compare(submission, got, oracle.mha(params, H, query, key, value, mask=mask), text,
                hint="pass the mask on to scaled_dot_product_attention; True = allowed",
                mistakes=classic_mistakes(params, H, query, key, value, mask=mask))


@pytest.mark.points(1)
def test_mha_with_an_additive_float_mask_matches_torch(submission):
    """A floating [Tq, Tk] mask is added to every head's scores."""
    module, params = mha.build(submission, 16, H, seed=13)
    x = inputs.randn(2, 6, 16, salt=187)
    mask = inputs.additive_mask(inputs.random_bool_mask(6, 6, salt=188), salt=189)
    text = "mha(x, mask=float_mask [6, 6])"
    got = mha.run(module, text, x, mask=mask)
    mha.compare(submission, got, oracle.mha(params, H, x, mask=mask), text,
                hint="pass the float mask on unchanged: it is ADDED to the scores",
                mistakes=classic_mistakes(params, H, x, mask=mask) | {
                "the float mask was used as a bool mask (mask == 0 as allowed)":
                oracle.mha_via_sdpa(params, H, x, mask=mask == 0)})


@pytest.mark.points(1)
def test_mha_with_a_padding_mask_matches_torch(submission):
    """A [B, 1, 1, Tk] padding mask blocks the padded keys of each batch item in every head."""
    module, params = mha.build(submission, 16, H, seed=14)
    x = inputs.randn(2, 6, 16, salt=190)
    mask = inputs.padding_mask([6, 3], 6)
    text = "mha(x, mask=padding_mask [2, 1, 1, 6])"
    got = mha.run(module, text, x, mask=mask)
    mha.compare(submission, got, oracle.mha(params, H, x, mask=mask), text,
                hint="the [B, 1, 1, Tk] mask broadcasts over [B, H, Tq, Tk]: pass it on as it is",
                mistakes=classic_mistakes(params, H, x, mask=mask))


@pytest.mark.points(1)
def test_mha_causal_cross_attention_is_top_left_aligned(submission):
    """forward(query, key, value, is_causal=True) with Tq != Tk lets query i see keys j <= i."""
    module, params = mha.build(submission, 16, H, seed=15)
    query, key, value = cross_inputs(4, 7, salt=191)
    text = "mha(query [2, 4, 16], key [2, 7, 16], value, is_causal=True)"
    got = mha.run(module, text, query, key, value, is_causal=True)
    bottom_right = torch.ones(4, 7, dtype=torch.bool).tril(3)
    mha.compare(submission, got, oracle.mha(params, H, query, key, value, is_causal=True), text,
                hint="pass is_causal on to scaled_dot_product_attention (a [Tq, Tk] lower triangle)",
                mistakes=classic_mistakes(params, H, query, key, value, is_causal=True) | {
                "the causal mask is bottom-right aligned; is_causal is top-left aligned":
                oracle.mha(params, H, query, key, value, mask=bottom_right)})


@pytest.mark.points(1)
def test_mha_in_float64_matches_torch_to_double_precision(submission):
    """After module.double(), float64 inputs give float64 results equal to torch's at double precision."""
    module, params = mha.build(submission, 24, 6, dtype=torch.float64, seed=16)
    x = inputs.randn(2, 6, 24, dtype=torch.float64, salt=194)
    text = "MultiHeadAttention(24, 6).double()(x, is_causal=True) in float64"
    got = mha.run(module, text, x, is_causal=True)
    mha.compare(submission, got, oracle.mha(params, 6, x, is_causal=True), text,
                hint="keep the inputs' dtype (no .float()); compute the scale with math.sqrt",
                mistakes=classic_mistakes(params, 6, x, is_causal=True))


@pytest.mark.points(1)
def test_mha_without_bias_in_cross_attention(submission):
    """MultiHeadAttention(12, 3, bias=False) has no biases and matches torch in cross-attention."""
    mha.check_projections(submission, 12, 3, bias=False)
    module, params = mha.build(submission, 12, 3, bias=False, seed=17)
    query, key, value = cross_inputs(6, 4, salt=195, d_model=12)
    text = "MultiHeadAttention(12, 3, bias=False)(query [2, 6, 12], key [2, 4, 12], value)"
    got = mha.run(module, text, query, key, value)
    mha.compare(submission, got, oracle.mha(params, 3, query, key, value, bias=False), text,
                mistakes=classic_mistakes(params, 3, query, key, value))


@pytest.mark.points(1)
def test_mha_value_defaults_to_key(submission):
    """forward(query, key) uses key as the value too."""
    module, params = mha.build(submission, 16, H, seed=18)
    query, key, _ = cross_inputs(5, 5, salt=196, distinct_value=False)
    text = "mha(query, key) (no value)"
    got = mha.run(module, text, query, key)
    mha.compare(submission, got, oracle.mha(params, H, query, key), text,
                hint="value = key if value is None else value (after key's own default)",
                mistakes=classic_mistakes(params, H, query, key))


@pytest.mark.points(1)
def test_mha_fully_blocked_rows_give_zero_weights(submission):
    """A query row whose keys are all blocked gets zero weights in every head, not NaN."""
    module, params = mha.build(submission, 16, H, seed=19)
    x = inputs.randn(2, 5, 16, salt=199)
    mask = inputs.random_bool_mask(5, 5, salt=200)
    mask[2] = False
    text = "mha(x, mask) with a fully blocked query row"
    got = mha.run(module, text, x, mask=mask)
    mha.compare(submission, got, oracle.mha_via_sdpa(params, H, x, mask=mask), text,
                hint="a fully blocked row gives zero weights, so its heads are 0 and its output is w_o's bias",
                mistakes=classic_mistakes(params, H, x, mask=mask))


@pytest.mark.points(1)
def test_mha_is_deterministic_in_train_and_eval_mode(submission):
    """forward gives the same result twice in a row and in train() and eval() mode (no dropout)."""
    module, params = mha.build(submission, 16, H, seed=20)
    x = inputs.randn(2, 6, 16, salt=201)
    expected = oracle.mha(params, H, x)
    module.train()
    first = mha.run(module, "mha(x) in train() mode", x)
    mha.compare(submission, first, expected, "mha(x) in train() mode", hint="no dropout: the lab's module has none")
    second = mha.run(module, "mha(x) in train() mode, called again", x)
    for got, previous, part in zip(second, first, ("output", "weights")):
        assert_close(got, previous, f"the second call's {part} (vs. the first call)",
                     hint="the same input must give the same result: no randomness, no state kept between calls")
    module.eval()
    evaluated = mha.run(module, "mha(x) in eval() mode", x)
    mha.compare(submission, evaluated, expected, "mha(x) in eval() mode")
