"""Task `sdpa`: scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None)."""

import pytest
import torch

from tests import inputs, reference
from tests.feedback import assert_close, assert_zero_where, check_tensor, fail

pytestmark = pytest.mark.task("sdpa")
DIMS = ("b", "h", "i", "j")
OUT_DIMS = ("b", "h", "i", "c")


def unpack(result, call):
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"{call} should return a pair (output, weights), got {type(result).__name__}")
    return result


@pytest.mark.points(1)
def test_sdpa_returns_output_and_weights_of_the_right_shapes(submission):
    """output is [..., Tq, dv] and weights [..., Tq, Tk]."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=4, k_len=6, d=8, dv=5)
    output, weights = unpack(submission.scaled_dot_product_attention(q, k, v), "scaled_dot_product_attention(q, k, v)")
    check_tensor(output, "output", shape=(2, 3, 4, 5), layout="[B, H, Tq, dv]",
                 hint="output = weights @ v")
    check_tensor(weights, "weights", shape=(2, 3, 4, 6), layout="[B, H, Tq, Tk]")


@pytest.mark.points(2)
def test_sdpa_matches_torch_without_a_mask(submission):
    """Output and weights equal torch's F.scaled_dot_product_attention."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=5, k_len=5, d=16, salt=20)
    output, weights = unpack(submission.scaled_dot_product_attention(q, k, v), "scaled_dot_product_attention(q, k, v)")
    expected_output, expected_weights = reference.sdpa(q, k, v)
    assert_close(weights, expected_weights, "weights", DIMS, hint="weights = softmax(q k^T / sqrt(d), dim=-1)",
                 mistakes={"the scores are not scaled by 1/sqrt(d)": torch.softmax(q @ k.transpose(-2, -1), -1)})
    assert_close(output, expected_output, "output", OUT_DIMS, hint="output = weights @ v")


@pytest.mark.points(2)
def test_sdpa_matches_torch_with_is_causal(submission):
    """is_causal=True equals torch's SDPA with is_causal=True."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=6, k_len=6, d=8, salt=21)
    output, weights = unpack(submission.scaled_dot_product_attention(q, k, v, is_causal=True),
                             "scaled_dot_product_attention(q, k, v, is_causal=True)")
    expected_output, expected_weights = reference.sdpa(q, k, v, is_causal=True)
    assert_close(weights, expected_weights, "weights with is_causal=True", DIMS,
                 hint="block keys j > i with -inf before the softmax")
    assert_close(output, expected_output, "output with is_causal=True", OUT_DIMS)


@pytest.mark.points(2)
def test_sdpa_causal_weights_are_exactly_zero_in_the_future(submission):
    """With is_causal=True, weights[..., i, j] == 0.0 for every j > i."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=6, k_len=6, d=8, salt=22)
    _, weights = unpack(submission.scaled_dot_product_attention(q, k, v, is_causal=True),
                        "scaled_dot_product_attention(q, k, v, is_causal=True)")
    check_tensor(weights, "weights", shape=(2, 2, 6, 6), layout="[B, H, Tq, Tk]")
    future = ~torch.ones(6, 6, dtype=torch.bool).tril()
    assert_zero_where(weights, future, "weights at future positions (j > i)", DIMS,
                      hint="is your mask inverted? True = allowed; the future is the upper triangle.")


@pytest.mark.points(1)
def test_module_form_matches_the_function(submission):
    """ScaledDotProductAttention()(q, k, v, is_causal=True) equals the function."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=5, k_len=5, d=8, salt=23)
    module = submission.ScaledDotProductAttention()
    output, weights = unpack(module(q, k, v, is_causal=True), "ScaledDotProductAttention()(q, k, v, is_causal=True)")
    expected_output, expected_weights = reference.sdpa(q, k, v, is_causal=True)
    assert_close(weights, expected_weights, "ScaledDotProductAttention weights", DIMS,
                 hint="forward should call scaled_dot_product_attention with the same arguments")
    assert_close(output, expected_output, "ScaledDotProductAttention output", OUT_DIMS)
