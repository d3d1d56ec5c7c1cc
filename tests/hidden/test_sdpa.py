"""Task `sdpa` (hidden): masks of every kind, is_causal with other Tq != Tk, any rank, float64, scale,
gradients, and the input checks, on other shapes and seeds than the public suite."""

import math

import pytest
import torch

from tests.support import inputs, oracle, sweep
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import (
    assert_close,
    assert_unchanged,
    call,
    call_measured,
    compare_pair,
    expect_raises,
    gradients,
    run_causal,
    run_sdpa,
    unpack_pair,
)
from tests.support.mistakes import causal_mistakes, sdpa_mistakes

pytestmark = pytest.mark.task("sdpa")
ANY_RANK = ("use operations that work for any number of leading dims: q @ k.transpose(-2, -1), "
            "softmax(dim=-1) and weights @ v (einsum 'bhid,...' or bmm only fit one rank)")


def scores_of(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))


@pytest.mark.points(1)
def test_sdpa_with_bool_and_padding_masks_matches_torch(submission):
    """A [B, H, Tq, Tk] bool mask and a [B, 1, 1, Tk] padding mask (True = allowed) give torch's SDPA results, and
    so do 16 configurations of the public sweep's space drawn with another seed (other shapes, masks, dtypes)."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=5, k_len=7, d=8, salt=130)
    for kind, mask in (("bool_mask", inputs.random_bool_mask(2, 3, 5, 7, salt=131)),
                       ("padding_mask [2, 1, 1, 7]", inputs.padding_mask([7, 3], 7))):
        label = f"scaled_dot_product_attention(q, k, v, mask={kind})"
        got = run_sdpa(submission, label, q, k, v, mask=mask)
        compare_pair(got, oracle.sdpa(q, k, v, mask=mask), label,
                     sdpa_mistakes(q, k, v, mask),
                     hint="scores.masked_fill(~mask, float('-inf')) before the softmax; True = allowed")
    sweep.run_all("scaled_dot_product_attention over the sweep", sweep.configs(seed=103, count=16),
                  lambda case: sweep.check_sdpa(submission, case, salt=139))


@pytest.mark.points(1)
def test_sdpa_adds_a_float_mask_to_the_scores(submission):
    """A floating mask is added to the scaled scores, as in torch's SDPA; ScaledDotProductAttention takes it by
    position (its fourth argument) and is not causal by default."""
    q, k, v = inputs.qkv(lead=(3, 2), q_len=6, k_len=4, d=8, salt=132)
    mask = inputs.additive_mask(inputs.random_bool_mask(3, 2, 6, 4, salt=133), salt=134)
    label = "scaled_dot_product_attention(q, k, v, mask=float_mask)"
    got = run_sdpa(submission, label, q, k, v, mask=mask)
    compare_pair(got, oracle.sdpa(q, k, v, mask=mask), label,
                 sdpa_mistakes(q, k, v, mask),
                 hint="a float mask is ADDED to the scaled scores")
    module = submission.ScaledDotProductAttention()
    for label, args, expected in (("ScaledDotProductAttention()(q, k, v, float_mask) (the mask by position)",
                                   (q, k, v, mask), oracle.sdpa(q, k, v, mask=mask)),
                                  ("ScaledDotProductAttention()(q, k, v) (not causal by default)", (q, k, v),
                                   oracle.sdpa(q, k, v))):
        got = unpack_pair(call(module, label, *args), label)
        compare_pair(got, expected, label, hint="forward(self, query, key, value, mask=None, is_causal=False)")


@pytest.mark.points(1)
def test_sdpa_is_causal_is_top_left_aligned_for_other_lengths(submission):
    """is_causal lets query i see keys j <= i for (Tq, Tk) = (2, 6), (6, 4) and (1, 5) (one query: key 0 only)."""
    for q_len, k_len, salt in ((2, 6, 136), (6, 4, 137), (1, 5, 138)):
        q, k, v = inputs.qkv(lead=(3,), q_len=q_len, k_len=k_len, d=4, salt=salt)
        label = f"scaled_dot_product_attention(q [3, {q_len}, 4], k [3, {k_len}, 4], v, is_causal=True)"
        hint = "block key j for query i when j > i, with a [Tq, Tk] mask: torch.ones(Tq, Tk).tril()"
        got = run_causal(submission, label, q, k, v, oracle.sdpa(q, k, v), hint=hint)
        compare_pair(got, oracle.sdpa(q, k, v, is_causal=True), label, causal_mistakes(q, k, v), hint=hint,
                     dims=("b", "i", "j"), out_dims=("b", "i", "c"))


@pytest.mark.points(1)
def test_sdpa_applies_a_float_mask_and_is_causal_with_tq_different_from_tk(submission):
    """A [Tq, Tk] float mask, then a bool one, and is_causal=True both apply to 3-D inputs with Tq = 4, Tk = 6, in
    the function (which leaves its inputs, the mask too, unchanged) and in ScaledDotProductAttention."""
    q, k, v = inputs.qkv(lead=(2,), q_len=4, k_len=6, d=8, salt=138)
    allowed = inputs.random_bool_mask(4, 6, salt=139)
    mask = inputs.additive_mask(allowed, salt=140)
    hint = "apply the mask AND block the causal future with -inf"
    for kind, given in (("float_mask", mask), ("bool_mask", allowed)):
        label = f"scaled_dot_product_attention(q, k, v, {kind} [4, 6], True)"
        result, measured = call_measured(submission, submission.scaled_dot_product_attention, label, q, k, v, given,
                                         True)
        got = unpack_pair(result, label)
        compare_pair(got, oracle.sdpa(q, k, v, mask=given, is_causal=True), label,
                     sdpa_mistakes(q, k, v, given, is_causal=True), hint=hint, dims=("b", "i", "j"),
                     out_dims=("b", "i", "c"))
        assert_unchanged([q, k, v, given], measured.args_after[:4], ["q", "k", "v", "mask"],
                         "scaled_dot_product_attention")
    expected = oracle.sdpa(q, k, v, mask=mask, is_causal=True)
    label = "ScaledDotProductAttention()(q, k, v, float_mask [4, 6], True)"
    got = unpack_pair(call(submission.ScaledDotProductAttention(), label, q, k, v, mask, True), label)
    passed_on = {"ScaledDotProductAttention.forward does not pass is_causal on (or drops it when a mask is given)":
                 oracle.sdpa(q, k, v, mask=mask)}
    compare_pair(got, expected, label, passed_on, hint="forward should pass mask AND is_causal on",
                 dims=("b", "i", "j"), out_dims=("b", "i", "c"))


@pytest.mark.points(1)
def test_sdpa_accepts_2d_3d_and_5d_inputs(submission):
    """q, k, v of shapes [T, d], [B, T, d] and [A, B, H, T, d] all work (built from tensor operations)."""
    for lead, salt in (((), 141), ((3,), 142), ((2, 2, 2), 143)):
        q, k, v = inputs.qkv(lead=lead, q_len=4, k_len=5, d=8, dv=6, salt=salt)
        label = f"scaled_dot_product_attention(q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)})"
        got = run_sdpa(submission, label, q, k, v, hint=ANY_RANK)
        compare_pair(got, oracle.sdpa(q, k, v), label, hint=ANY_RANK, dims=None, out_dims=None)


@pytest.mark.points(1)
def test_sdpa_scale_in_float64_defaults_to_inverse_sqrt_d_of_q(submission):
    """In float64 with dv != d, scale=None means 1/sqrt(q.size(-1)) (computed exactly) and scale=2.0 is used as
    given; both with is_causal=True."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=5, k_len=5, d=8, dv=3, dtype=torch.float64, salt=144)
    label = "scaled_dot_product_attention(q [.., 8], k [.., 8], v [.., 3], is_causal=True) in float64"
    got = run_sdpa(submission, label, q, k, v, is_causal=True)
    float32_sqrt = torch.tensor(8.0).sqrt()  # what torch.sqrt(torch.tensor(d)) gives: float32
    expected = oracle.sdpa(q, k, v, is_causal=True)
    mistakes = sdpa_mistakes(q, k, v, is_causal=True) | {
        "the scale was computed in float32 (multiplying by 1 / torch.sqrt(torch.tensor(d)), a float32 tensor): "
        "use d ** -0.5": oracle.sdpa(q, k, v, is_causal=True, scale=(1 / float32_sqrt).item()),
        "the scale was computed in float32 (dividing by torch.sqrt(torch.tensor(d)), a float32 tensor): use "
        "math.sqrt(d)": oracle.sdpa(q, k, v, is_causal=True, scale=1 / float32_sqrt.item()),
    }
    compare_pair(got, expected, label, mistakes, hint="the default scale is 1/sqrt(q.size(-1)), in float64")
    label = label.replace("is_causal=True", "is_causal=True, scale=2.0")
    got = run_sdpa(submission, label, q, k, v, is_causal=True, scale=2.0)
    compare_pair(got, oracle.sdpa(q, k, v, is_causal=True, scale=2.0), label,
                 {"the scale argument is ignored (always 1/sqrt(d))": expected,
                  "the scores are divided by scale, not multiplied": oracle.sdpa(q, k, v, is_causal=True, scale=0.5)},
                 hint="pass scale on to attention_scores")


@pytest.mark.points(1)
def test_sdpa_gradients_match_torch_in_float64(submission):
    """Gradients through output and weights with respect to q, k and v equal torch's (float64, is_causal)."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=5, k_len=6, d=4, dv=3, dtype=torch.float64, salt=145)
    g = inputs.generator(146)
    cotangents = [torch.randn(2, 2, 5, 3, generator=g, dtype=torch.float64),
                  torch.randn(2, 2, 5, 6, generator=g, dtype=torch.float64)]
    label = "scaled_dot_product_attention(q, k, v, is_causal=True)"
    got = run_sdpa(submission, label, q, k, v, is_causal=True)
    compare_pair(got, oracle.sdpa(q, k, v, is_causal=True), label, causal_mistakes(q, k, v))

    def torch_grads(through_weights):
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        output, weights = oracle.sdpa(*leaves, is_causal=True)
        loss = (output * cotangents[0]).sum() + (weights * cotangents[1]).sum() * through_weights
        return torch.autograd.grad(loss, leaves)

    grads = gradients(submission.scaled_dot_product_attention, label, (q, k, v), [0, 1, 2], cotangents,
                      ["q", "k", "v"], is_causal=True)
    for name, grad, expected, detached in zip("qkv", grads, torch_grads(True), torch_grads(False)):
        assert_close(grad, expected, f"d(loss)/d{name} of {label}", ("b", "h", "t", "c"),
                     hint="use differentiable torch operations only (no .detach(), .data, .item() or in-place "
                          "writes into tensors autograd needs)",
                     mistakes={"the weights are detached (or built under no_grad): gradients must flow through "
                               "the returned weights too": detached})


@pytest.mark.points(1)
def test_sdpa_rejects_k_and_v_with_different_lengths(submission):
    """k [..., Tk, d] and v [..., Tk', dv] with Tk != Tk' raise ValueError (matching lengths still give torch's
    result)."""
    q, k, good_v = inputs.qkv(lead=(2, 3), q_len=4, k_len=6, d=8, salt=152)
    label = "scaled_dot_product_attention(q [2, 3, 4, 8], k [2, 3, 6, 8], v [2, 3, 6, 8])"
    compare_pair(run_sdpa(submission, label, q, k, good_v), oracle.sdpa(q, k, good_v), label)
    v = inputs.randn(2, 3, 5, 8, salt=153)
    expect_raises(lambda: submission.scaled_dot_product_attention(q, k, v), ValueError,
                  "scaled_dot_product_attention(q [2, 3, 4, 8], k [2, 3, 6, 8], v [2, 3, 5, 8])",
                  "6 keys but 5 values", "call the given _check_qkv(q, k, v) first.")
