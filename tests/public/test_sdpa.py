"""Task `sdpa`: scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None)."""


import pytest
import torch

from tests.support import inputs, oracle, sweep
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import (
    SDPA_OUT_DIMS,
    assert_close,
    assert_unchanged,
    assert_zero_where,
    call,
    call_measured,
    compare_pair,
    gradients,
    run_causal,
    run_sdpa,
    unpack_pair,
)
from tests.support.mistakes import causal_mistakes, sdpa_mistakes

pytestmark = pytest.mark.task("sdpa")
BOTH = "apply the causal mask AND the given mask (each blocks with -inf)"


def both_masks_hint(got, allowed, kind):
    """What the weights show about the two masks: weight on a key the causal rule blocks, on one the mask blocks,
    or neither (the blocking is right, so the mistake is in how the allowed keys are weighted)."""
    weights = got[1] if isinstance(got, (tuple, list)) and len(got) == 2 else None
    if not isinstance(weights, torch.Tensor) or weights.shape != allowed.shape:
        return BOTH
    q_len, k_len = allowed.shape[-2:]
    causal = torch.ones(q_len, k_len, dtype=torch.bool).tril()
    leaks = weights.detach().double().abs() > 1e-6
    if bool((leaks & ~causal).any()):
        return "weight reaches keys j > i: is_causal was not applied here; " + BOTH
    if bool((leaks & causal & ~allowed).any()):
        how = "a float mask is ADDED to the scores (-inf blocks)" if kind == "float_mask" else "False blocks"
        return f"weight reaches keys the mask blocks: the mask was not applied as given: {how}"
    return ("every blocked key has weight 0, so both masks block; the weights of the allowed keys are off: "
            "check how the mask's finite values enter the scores, and the softmax")


def second_call(submission, salt=34):
    """A second, independent call without a mask (other sizes, none equal to or the square of another): what a cause
    named on the first call must explain too. (got, expected, mistakes)"""
    q, k, v = inputs.qkv(lead=(3, 2), q_len=11, k_len=6, d=10, dv=7, salt=salt)
    label = "scaled_dot_product_attention(q [3, 2, 11, 10], k [3, 2, 6, 10], v [3, 2, 6, 7])"
    got = unpack_pair(call(submission.scaled_dot_product_attention, label, q, k, v), label)
    return tuple(got), oracle.sdpa(q, k, v), sdpa_mistakes(q, k, v)


@pytest.mark.points(2)
def test_sdpa_matches_torch_without_a_mask(submission):
    """output [B, H, Tq, dv] and weights [B, H, Tq, Tk] equal torch's; q, k and v stay unchanged. The sizes
    (B=2, H=3, Tq=5, Tk=7, d=12, dv=6) are all different and none is the square of another."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=5, k_len=7, d=12, dv=6, salt=20)
    label = "scaled_dot_product_attention(q [2, 3, 5, 12], k [2, 3, 7, 12], v [2, 3, 7, 6])"
    result, measured = call_measured(submission, submission.scaled_dot_product_attention, label, q, k, v)
    got = unpack_pair(result, label)
    expected = oracle.sdpa(q, k, v)
    compare_pair(got, expected, label, sdpa_mistakes(q, k, v).confirmed_by(lambda: second_call(submission)),
                 hint="weights = softmax(q k^T / sqrt(d), dim=-1)")
    assert_unchanged([q, k, v], measured.args_after[:3], ["q", "k", "v"], "scaled_dot_product_attention")


@pytest.mark.points(2)
def test_sdpa_with_is_causal_gives_exactly_zero_weight_to_the_future(submission):
    """is_causal=True equals torch's SDPA with is_causal=True: weights[..., i, j] == 0.0 for every j > i."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=6, k_len=6, d=8, salt=21)
    label = "scaled_dot_product_attention(q, k, v, is_causal=True)"
    got = run_sdpa(submission, label, q, k, v, is_causal=True)
    compare_pair(got, oracle.sdpa(q, k, v, is_causal=True), label, causal_mistakes(q, k, v),
                 hint="block keys j > i with -inf before the softmax")
    future = ~torch.ones(6, 6, dtype=torch.bool).tril()
    assert_zero_where(got[1], future, f"{label} weights at future positions (j > i)")


@pytest.mark.points(1)
def test_sdpa_is_causal_is_top_left_aligned_when_tq_differs_from_tk(submission):
    """With Tq != Tk, is_causal lets query i see keys j <= i (top-left aligned, as torch), for Tq < Tk, Tq > Tk and
    a single query (Tq = 1: it sees key 0 only)."""
    for q_len, k_len, salt in ((3, 7, 22), (7, 3, 23), (1, 6, 35)):
        q, k, v = inputs.qkv(lead=(2, 2), q_len=q_len, k_len=k_len, d=8, salt=salt)
        label = f"scaled_dot_product_attention(q [2, 2, {q_len}, 8], k [2, 2, {k_len}, 8], v, is_causal=True)"
        hint = ("build the causal mask with shape [Tq, Tk]: torch.ones(Tq, Tk, dtype=torch.bool).tril()" if q_len > 1
                else "a single query is query 0: it sees key 0 only, so is_causal applies at Tq = 1 too (do not skip "
                     "it there, and align the mask to the top-left: tril(), not tril(Tk - Tq))")
        got = run_causal(submission, label, q, k, v, oracle.sdpa(q, k, v), hint=hint)
        compare_pair(got, oracle.sdpa(q, k, v, is_causal=True), label, causal_mistakes(q, k, v), hint=hint)


@pytest.mark.points(2)
def test_sdpa_applies_both_mask_and_is_causal(submission):
    """With a mask (bool or float) and is_causal=True, a key is allowed only when both allow it, in the function
    and in ScaledDotProductAttention."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=6, k_len=6, d=8, salt=24)
    allowed = inputs.random_bool_mask(2, 3, 6, 6, salt=25)
    for kind, mask in (("bool_mask", allowed), ("float_mask", inputs.additive_mask(allowed, salt=26))):
        label = f"scaled_dot_product_attention(q, k, v, mask={kind}, is_causal=True)"
        result, measured = call_measured(submission, submission.scaled_dot_product_attention, label, q, k, v, mask,
                                         True)
        got = unpack_pair(result, label)
        compare_pair(got, oracle.sdpa(q, k, v, mask=mask, is_causal=True), label,
                     sdpa_mistakes(q, k, v, mask, is_causal=True), hint=both_masks_hint(got, allowed, kind))
        assert_unchanged([q, k, v, mask], measured.args_after[:4], ["q", "k", "v", "mask"],
                         "scaled_dot_product_attention")
    label = "ScaledDotProductAttention()(q, k, v, mask=bool_mask, is_causal=True)"
    module = submission.ScaledDotProductAttention()
    got = unpack_pair(call(module, label, q, k, v, mask=allowed, is_causal=True), label)
    passed_on = {
        "ScaledDotProductAttention.forward does not pass is_causal on (or drops it when a mask is given)":
            oracle.sdpa(q, k, v, mask=allowed),
        "ScaledDotProductAttention.forward does not pass the mask on (or drops it when is_causal=True)":
            oracle.sdpa(q, k, v, is_causal=True),
    }
    compare_pair(got, oracle.sdpa(q, k, v, mask=allowed, is_causal=True), label, passed_on,
                 hint="forward should pass mask AND is_causal on to scaled_dot_product_attention")


@pytest.mark.points(1)
def test_sdpa_uses_an_explicit_scale_as_given_even_0(submission):
    """scale=s multiplies the scores by s, for s = 0.37 and s = 0.0 (uniform weights); 3-D inputs here."""
    q, k, v = inputs.qkv(lead=(3,), q_len=4, k_len=5, d=8, dv=6, salt=27)
    for scale in (0.37, 0.0):  # 0.37 first: at 0.0, the default scale then means 0.0 was read as None
        label = f"scaled_dot_product_attention(q [3, 4, 8], k [3, 5, 8], v [3, 5, 6], scale={scale})"
        got = run_sdpa(submission, label, q, k, v, scale=scale)
        compare_pair(got, oracle.sdpa(q, k, v, scale=scale), label, sdpa_mistakes(q, k, v, scale=scale),
                     dims=("b", "i", "j"),
                     out_dims=("b", "i", "c"), hint="pass scale on to attention_scores; test `scale is None`")


@pytest.mark.points(1)
def test_sdpa_fully_blocked_rows_give_zero_output(submission):
    """A query whose keys are all blocked gets all-zero weights and an all-zero output, not NaN."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=5, k_len=6, d=8, salt=28)
    mask = inputs.random_bool_mask(2, 2, 5, 6, salt=29)
    mask[0, 1, 3] = False
    mask[1, :, 0] = False
    label = "scaled_dot_product_attention(q, k, v, mask) with fully blocked rows"
    got = run_sdpa(submission, label, q, k, v, mask=mask)
    blocked = ~mask.any(-1, keepdim=True)
    compare_pair(got, oracle.sdpa(q, k, v, mask=mask), label, sdpa_mistakes(q, k, v, mask), blocked=blocked,
                 hint="rows whose keys are all blocked must give zeros, not NaN (softmax of all -inf is NaN)")
    assert_zero_where(got[0], ~mask.any(-1, keepdim=True), "output of a fully blocked query", SDPA_OUT_DIMS)


@pytest.mark.points(1)
def test_sdpa_in_float64_matches_torch_and_passes_gradients(submission):
    """float64 inputs with a bool mask give float64 output and weights equal to torch's, and gradients with
    respect to q, k and v flow through both."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=4, k_len=5, d=6, dv=2, dtype=torch.float64, salt=30)
    mask = inputs.random_bool_mask(2, 3, 4, 5, salt=31)
    label = "scaled_dot_product_attention(q, k, v, mask) in float64"
    got = run_sdpa(submission, label, q, k, v, mask)
    expected = oracle.sdpa(q, k, v, mask=mask)
    compare_pair(got, expected, label, sdpa_mistakes(q, k, v, mask))
    cotangents = [inputs.randn(2, 3, 4, 2, dtype=torch.float64, salt=32),
                  inputs.randn(2, 3, 4, 5, dtype=torch.float64, salt=33)]

    def torch_grads(through_weights):
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        output, weights = oracle.sdpa(*leaves, mask=mask)
        loss = (output * cotangents[0]).sum() + (weights * cotangents[1]).sum() * through_weights
        return torch.autograd.grad(loss, leaves)

    detached = torch_grads(through_weights=False)
    grads = gradients(submission.scaled_dot_product_attention, label, (q, k, v, mask), [0, 1, 2], cotangents,
                      ["q", "k", "v"])
    for name, grad, expected_grad, detached_grad in zip("qkv", grads, torch_grads(through_weights=True), detached):
        assert_close(grad, expected_grad, f"d(loss)/d{name} of {label}", ("b", "h", "t", "c"),
                     hint="use differentiable torch operations only (no .detach(), .data or .item())",
                     mistakes={"the returned weights are detached (or built under no_grad): gradients must flow "
                               "through them too": detached_grad})


@pytest.mark.points(1)
def test_the_module_takes_mask_fourth_and_is_not_causal_by_default(submission):
    """ScaledDotProductAttention()(q, k, v) is not causal (is_causal defaults to False), and
    module(q, k, v, mask) takes the mask as its fourth argument, as forward(query, key, value, mask=None,
    is_causal=False) says; Tq=5, Tk=7."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=5, k_len=7, d=6, salt=36)
    allowed = inputs.random_bool_mask(5, 7, salt=37)
    module = submission.ScaledDotProductAttention()
    label = "ScaledDotProductAttention()(q, k, v)"
    got = unpack_pair(call(module, label, q, k, v), label)
    compare_pair(got, oracle.sdpa(q, k, v), label,
                 {"ScaledDotProductAttention.forward defaults to is_causal=True: its default is False, as the "
                  "function's": oracle.sdpa(q, k, v, is_causal=True)},
                 hint="forward(self, query, key, value, mask=None, is_causal=False)")
    label = "ScaledDotProductAttention()(q, k, v, bool_mask [5, 7]) (the mask by position)"
    got = unpack_pair(call(module, label, q, k, v, allowed), label)
    compare_pair(got, oracle.sdpa(q, k, v, mask=allowed), label,
                 {"the fourth positional argument of forward is not the mask: the signature is forward(self, query, "
                  "key, value, mask=None, is_causal=False)": oracle.sdpa(q, k, v)},
                 hint="forward(self, query, key, value, mask=None, is_causal=False), passing both on")


@pytest.mark.points(1)
def test_sdpa_over_a_seeded_sweep_of_shapes_masks_and_dtypes(submission):
    """scaled_dot_product_attention equals torch's on 16 configurations drawn (seeded) from: batch 1, one head,
    Tq = 1, Tq != Tk, sizes that are not powers of two, bool and float masks of every broadcast shape ([Tk],
    [Tq, Tk], [B, 1, 1, Tk], [B, 1, Tq, Tk], [1, H, Tq, Tk], [B, H, Tq, Tk]) by position and by keyword,
    is_causal, rows with no allowed key, float32 and float64."""
    sweep.run_all("scaled_dot_product_attention over the sweep", sweep.configs(seed=3, count=16),
                  lambda case: sweep.check_sdpa(submission, case, salt=38))
