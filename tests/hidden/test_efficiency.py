"""Task `efficiency` (hidden): no Python loops in MultiHeadAttention, masked attention or the masked softmax."""

import pytest

from tests import inputs
from tests.efficiency import assert_no_loops, op_count

pytestmark = pytest.mark.task("efficiency")
SMALL = (2, 2, 8, 16)
LARGE = (4, 8, 64, 16)


@pytest.mark.points(3)
def test_mha_forward_runs_the_same_operations_at_every_shape(submission):
    """MultiHeadAttention.forward's operation count does not grow with B, T, d_model or H."""
    small_module = submission.MultiHeadAttention(16, 2)
    large_module = submission.MultiHeadAttention(64, 8)
    small = op_count(submission, small_module, inputs.randn(2, 8, 16, salt=210), is_causal=True)
    large = op_count(submission, large_module, inputs.randn(4, 32, 64, salt=211), is_causal=True)
    assert_no_loops("MultiHeadAttention.forward", small, large, "B=2, T=8, d_model=16, H=2",
                    "B=4, T=32, d_model=64, H=8")


@pytest.mark.points(1)
def test_sdpa_with_a_bool_mask_runs_the_same_operations_at_every_shape(submission):
    """scaled_dot_product_attention with a bool mask runs a constant number of operations."""
    sdpa = submission.scaled_dot_product_attention
    small_q, small_k, small_v = inputs.qkv(lead=SMALL[:2], q_len=SMALL[2], k_len=SMALL[2], d=SMALL[3], salt=212)
    large_q, large_k, large_v = inputs.qkv(lead=LARGE[:2], q_len=LARGE[2], k_len=LARGE[2], d=LARGE[3], salt=213)
    small = op_count(submission, sdpa, small_q, small_k, small_v,
                     mask=inputs.random_bool_mask(*SMALL[:3], SMALL[2], salt=214))
    large = op_count(submission, sdpa, large_q, large_k, large_v,
                     mask=inputs.random_bool_mask(*LARGE[:3], LARGE[2], salt=215))
    assert_no_loops("scaled_dot_product_attention(q, k, v, mask=bool_mask)", small, large, SMALL, LARGE)


@pytest.mark.points(1)
def test_sdpa_with_a_padding_mask_runs_the_same_operations_at_every_shape(submission):
    """scaled_dot_product_attention with a [B, 1, 1, Tk] padding mask runs a constant number of operations."""
    sdpa = submission.scaled_dot_product_attention
    small_q, small_k, small_v = inputs.qkv(lead=SMALL[:2], q_len=SMALL[2], k_len=SMALL[2], d=SMALL[3], salt=216)
    large_q, large_k, large_v = inputs.qkv(lead=LARGE[:2], q_len=LARGE[2], k_len=LARGE[2], d=LARGE[3], salt=217)
    small = op_count(submission, sdpa, small_q, small_k, small_v, mask=inputs.padding_mask([8, 5], 8))
    large = op_count(submission, sdpa, large_q, large_k, large_v, mask=inputs.padding_mask([64, 40, 17, 3], 64))
    assert_no_loops("scaled_dot_product_attention(q, k, v, mask=padding_mask)", small, large, SMALL, LARGE)


@pytest.mark.points(1)
def test_attention_weights_runs_the_same_operations_at_every_shape(submission):
    """attention_weights with a bool mask runs a constant number of operations."""
    weights = submission.attention_weights
    small_shape, large_shape = (2, 2, 8, 8), (4, 8, 64, 64)
    small = op_count(submission, weights, inputs.randn(*small_shape, salt=218),
                     inputs.random_bool_mask(*small_shape, salt=219))
    large = op_count(submission, weights, inputs.randn(*large_shape, salt=220),
                     inputs.random_bool_mask(*large_shape, salt=221))
    assert_no_loops("attention_weights(scores, mask)", small, large, small_shape, large_shape)
