"""Task `mha`: MultiHeadAttention(d_model, n_heads, bias=True)."""

import pytest

from tests import inputs, mha_support, reference
from tests.feedback import check_tensor, fail

pytestmark = pytest.mark.task("mha")


@pytest.mark.points(1)
def test_mha_has_linear_projections_w_q_w_k_w_v_w_o(submission):
    """The module has nn.Linear(d_model, d_model) attributes w_q, w_k, w_v and w_o."""
    module = submission.MultiHeadAttention(16, 4)
    for name in ("w_q", "w_k", "w_v", "w_o"):
        try:
            weight = getattr(module, name).weight
        except Exception:
            fail(f"MultiHeadAttention(16, 4) has no nn.Linear attribute `{name}` (self.{name} = nn.Linear(d_model, d_model))")
        check_tensor(weight, f"{name}.weight", shape=(16, 16), layout="[d_model, d_model]")


@pytest.mark.points(2)
def test_mha_returns_output_and_per_head_weights(submission):
    """forward(x [B, T, d_model]) returns output [B, T, d_model] and weights [B, H, T, T]."""
    module, _ = mha_support.build(submission, 16, 4)
    x = inputs.randn(2, 5, 16, salt=40)
    output, weights = mha_support.run(module, "MultiHeadAttention(16, 4)(x)", x)
    check_tensor(output, "output", shape=(2, 5, 16), layout="[B, T, d_model]")
    check_tensor(weights, "weights", shape=(2, 4, 5, 5), layout="[B, H, Tq, Tk]",
                 hint="return the per-head weights, not their mean over heads")


@pytest.mark.points(3)
def test_mha_self_attention_matches_torch(submission):
    """Self-attention equals nn.MultiheadAttention with the same weights."""
    module, params = mha_support.build(submission, 16, 4, seed=1)
    x = inputs.randn(2, 6, 16, salt=41)
    got = mha_support.run(module, "mha(x)", x)
    mha_support.compare(got, reference.mha(params, 4, x), "mha(x)")


@pytest.mark.points(2)
def test_mha_causal_self_attention_matches_torch(submission):
    """forward(x, is_causal=True) equals nn.MultiheadAttention with a causal mask."""
    module, params = mha_support.build(submission, 16, 4, seed=2)
    x = inputs.randn(2, 6, 16, salt=42)
    got = mha_support.run(module, "mha(x, is_causal=True)", x, is_causal=True)
    mha_support.compare(got, reference.mha(params, 4, x, is_causal=True), "mha(x, is_causal=True)",
                        hint="pass is_causal on to scaled_dot_product_attention")
