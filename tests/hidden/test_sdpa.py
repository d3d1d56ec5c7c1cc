"""Task `sdpa` (hidden): masks of every kind, is_causal with Tq != Tk, any rank, float64, scale,
gradients, fully blocked rows, and the input checks."""

import math

import pytest
import torch

from tests import inputs, reference
from tests.feedback import assert_close, assert_unchanged, assert_zero_where, call, fail

pytestmark = pytest.mark.task("sdpa")
DIMS = ("b", "h", "i", "j")
OUT_DIMS = ("b", "h", "i", "c")
ANY_RANK = ("use operations that work for any number of leading dims: q @ k.transpose(-2, -1), "
            "softmax(dim=-1) and weights @ v (einsum 'bhid,...' or bmm only fit one rank)")


def unpack(result, call_text):
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"{call_text} should return a pair (output, weights), got {type(result).__name__}")
    return result


def run(submission, call_text, *args, hint=None, **kwargs):
    result = call(submission.scaled_dot_product_attention, call_text, *args, hint=hint, **kwargs)
    return unpack(result, call_text)


def compare(got, expected, call_text, mistakes=None, hint=None, dims=DIMS, out_dims=OUT_DIMS):
    """Weights first (the likely culprit), then the output; mistakes maps explanations to (output, weights)."""
    output, weights = got
    expected_output, expected_weights = expected
    mistakes = mistakes or {}
    assert_close(weights, expected_weights, f"{call_text} weights", dims, hint=hint,
                 mistakes={text: pair[1] for text, pair in mistakes.items()})
    assert_close(output, expected_output, f"{call_text} output", out_dims, hint="output = weights @ v",
                 mistakes={text: pair[0] for text, pair in mistakes.items()})


@pytest.mark.points(1)
def test_sdpa_with_a_bool_mask_matches_torch(submission):
    """A bool mask (True = allowed) gives torch's SDPA output and weights."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=5, k_len=7, d=8, salt=130)
    mask = inputs.random_bool_mask(2, 3, 5, 7, salt=131)
    text = "scaled_dot_product_attention(q, k, v, mask=bool_mask)"
    got = run(submission, text, q, k, v, mask=mask)
    compare(got, reference.sdpa(q, k, v, mask=mask), text,
            hint="scores.masked_fill(~mask, float('-inf')) before the softmax; True = allowed",
            mistakes={"the bool mask is inverted: True means ALLOWED, block where it is False":
                      reference.sdpa(q, k, v, mask=~mask)})


@pytest.mark.points(1)
def test_sdpa_adds_a_float_mask_to_the_scores(submission):
    """A floating mask is added to the scaled scores, as in torch's SDPA."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=5, k_len=7, d=8, salt=132)
    allowed = inputs.random_bool_mask(2, 3, 5, 7, salt=133)
    mask = inputs.additive_mask(allowed, salt=134)
    text = "scaled_dot_product_attention(q, k, v, mask=float_mask)"
    got = run(submission, text, q, k, v, mask=mask)
    compare(got, reference.sdpa(q, k, v, mask=mask), text, hint="a float mask is ADDED to the scaled scores",
            mistakes={
                "the float mask was used as a bool mask (mask == 0 as allowed): a float mask is ADDED":
                    reference.sdpa(q, k, v, mask=mask == 0),
                "only the -inf entries of the float mask were used: ADD the whole mask":
                    reference.sdpa(q, k, v, mask=~torch.isneginf(mask)),
                "the float mask was ignored": reference.sdpa(q, k, v),
            })


@pytest.mark.points(1)
def test_sdpa_with_a_padding_mask_matches_torch(submission):
    """A [B, 1, 1, Tk] padding mask blocks the padded keys of each batch item for every head and query."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=6, k_len=6, d=8, salt=135)
    mask = inputs.padding_mask([6, 2], 6)
    text = "scaled_dot_product_attention(q, k, v, mask=padding_mask [2, 1, 1, 6])"
    got = run(submission, text, q, k, v, mask=mask)
    compare(got, reference.sdpa(q, k, v, mask=mask), text,
            hint="a [B, 1, 1, Tk] mask broadcasts over heads and queries in masked_fill",
            mistakes={"the bool mask is inverted: True means ALLOWED": reference.sdpa(q, k, v, mask=~mask)})


@pytest.mark.points(1)
def test_sdpa_is_causal_is_top_left_aligned_when_tq_differs_from_tk(submission):
    """With Tq != Tk, is_causal lets query i see keys j <= i (top-left aligned), for Tq < Tk and Tq > Tk."""
    for q_len, k_len, salt in ((3, 7, 136), (7, 3, 137)):
        q, k, v = inputs.qkv(lead=(2, 2), q_len=q_len, k_len=k_len, d=8, salt=salt)
        text = f"scaled_dot_product_attention(q [.., {q_len}, 8], k [.., {k_len}, 8], v, is_causal=True)"
        got = run(submission, text, q, k, v, is_causal=True,
                  hint="build the causal mask with shape [Tq, Tk] (torch.ones(Tq, Tk).tril()), not [T, T]")
        bottom_right = torch.ones(q_len, k_len, dtype=torch.bool).tril(k_len - q_len)
        compare(got, reference.sdpa(q, k, v, is_causal=True), text,
                hint="block key j for query i when j > i, with a [Tq, Tk] mask: torch.ones(Tq, Tk).tril()",
                mistakes={"the causal mask is bottom-right aligned (tril(Tk - Tq)); torch's is_causal is top-left "
                          "aligned: torch.ones(Tq, Tk).tril()": reference.sdpa(q, k, v, mask=bottom_right)})


@pytest.mark.points(1)
def test_sdpa_applies_both_mask_and_is_causal(submission):
    """With a mask and is_causal=True, a key is allowed only when both allow it (function and module form)."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=6, k_len=6, d=8, salt=138)
    mask = inputs.random_bool_mask(2, 3, 6, 6, salt=139)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    expected = reference.sdpa(q, k, v, mask=mask, is_causal=True)
    mistakes = {
        "is_causal was ignored because a mask was given: apply both": reference.sdpa(q, k, v, mask=mask),
        "the mask was ignored because is_causal=True: apply both": reference.sdpa(q, k, v, is_causal=True),
        "the masks were combined with OR: a key is allowed only if BOTH allow it (AND)":
            reference.sdpa(q, k, v, mask=mask | causal),
    }
    text = "scaled_dot_product_attention(q, k, v, mask=bool_mask, is_causal=True)"
    got = run(submission, text, q, k, v, mask=mask, is_causal=True)
    compare(got, expected, text, hint="apply the causal mask AND the given mask (both block with -inf)",
            mistakes=mistakes)
    text = "ScaledDotProductAttention()(q, k, v, mask=bool_mask, is_causal=True)"
    module = submission.ScaledDotProductAttention()
    got = unpack(call(module, text, q, k, v, mask=mask, is_causal=True), text)
    passed_on = {
        "ScaledDotProductAttention.forward does not pass is_causal on (or drops it when a mask is given)":
            mistakes["is_causal was ignored because a mask was given: apply both"],
        "ScaledDotProductAttention.forward does not pass the mask on (or drops it when is_causal=True)":
            mistakes["the mask was ignored because is_causal=True: apply both"],
    }
    compare(got, expected, text, mistakes=passed_on,
            hint="forward should pass mask AND is_causal on to scaled_dot_product_attention")


@pytest.mark.points(1)
def test_sdpa_accepts_2d_3d_and_5d_inputs(submission):
    """q, k, v of shapes [T, d], [B, T, d] and [A, B, H, T, d] all work (built from tensor operations)."""
    for lead, salt in (((), 140), ((3,), 141), ((2, 2, 2), 142)):
        q, k, v = inputs.qkv(lead=lead, q_len=4, k_len=5, d=8, dv=6, salt=salt)
        text = f"scaled_dot_product_attention(q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)})"
        got = run(submission, text, q, k, v, hint=ANY_RANK)
        compare(got, reference.sdpa(q, k, v), text, hint=ANY_RANK, dims=None, out_dims=None)


@pytest.mark.points(1)
def test_sdpa_in_float64_matches_torch_to_double_precision(submission):
    """float64 inputs give float64 output and weights equal to torch's at double precision."""
    q, k, v = inputs.qkv(lead=(2, 3), q_len=6, k_len=6, d=8, dtype=torch.float64, salt=143)
    text = "scaled_dot_product_attention(q, k, v, is_causal=True) in float64"
    got = run(submission, text, q, k, v, is_causal=True)
    float32_sqrt = torch.tensor(8.0).sqrt()  # what torch.sqrt(torch.tensor(d)) gives: float32
    divided = ("the scale was computed in float32 (dividing by torch.sqrt(torch.tensor(d)), a float32 "
               "tensor): use math.sqrt(d)")
    multiplied = ("the scale was computed in float32 (multiplying by 1 / torch.sqrt(torch.tensor(d)), a float32 "
                  "tensor): use d ** -0.5")
    compare(got, reference.sdpa(q, k, v, is_causal=True), text,
            hint="keep the inputs' dtype throughout (no .float()); compute the scale with math.sqrt(d)",
            mistakes={multiplied: reference.sdpa(q, k, v, is_causal=True, scale=(1 / float32_sqrt).item()),
                      divided: reference.sdpa(q, k, v, is_causal=True, scale=1 / float32_sqrt.item())})


@pytest.mark.points(1)
def test_sdpa_scale_defaults_to_inverse_sqrt_d_and_uses_an_explicit_scale(submission):
    """scale=None means 1/sqrt(d) of q and k even when dv != d; scale=s is used as given."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=5, k_len=6, d=8, dv=3, salt=144)
    text = "scaled_dot_product_attention(q [.., 8], k [.., 8], v [.., 3])"
    got = run(submission, text, q, k, v)
    compare(got, reference.sdpa(q, k, v), text, hint="the default scale is 1/sqrt(q.size(-1))",
            mistakes={"the scale used v's feature size: it is 1/sqrt(d) with d = q.size(-1)":
                      reference.sdpa(q, k, v, scale=1 / math.sqrt(3)),
                      "the scores are not scaled": reference.sdpa(q, k, v, scale=1.0)})
    text = "scaled_dot_product_attention(q, k, v, scale=0.37)"
    got = run(submission, text, q, k, v, scale=0.37)
    compare(got, reference.sdpa(q, k, v, scale=0.37), text, hint="pass scale on to attention_scores",
            mistakes={"the scale argument is ignored (always 1/sqrt(d))": reference.sdpa(q, k, v),
                      "the scores are divided by scale, not multiplied": reference.sdpa(q, k, v, scale=1 / 0.37)})


@pytest.mark.points(1)
def test_sdpa_gradients_match_torch_in_float64(submission):
    """Gradients through output and weights with respect to q, k and v equal torch's (float64)."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=5, k_len=6, d=4, dv=3, dtype=torch.float64, salt=145)
    g = inputs.generator(146)
    cotangents = [torch.randn(2, 2, 5, 3, generator=g, dtype=torch.float64),
                  torch.randn(2, 2, 5, 6, generator=g, dtype=torch.float64)]

    def torch_grads(use_weights=True):
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        output, weights = reference.sdpa(*leaves, is_causal=True)
        loss = (output * cotangents[0]).sum()
        if use_weights:
            loss = loss + (weights * cotangents[1]).sum()
        return torch.autograd.grad(loss, leaves)

    expected = torch_grads()
    detached = torch_grads(use_weights=False)
    got = submission.scaled_dot_product_attention.grad(args=(q, k, v), wrt=[0, 1, 2], cotangents=cotangents,
                                                       is_causal=True)
    if not isinstance(got, (list, tuple)) or len(got) != 3:
        fail(f"the backward pass returned {got!r}, expected gradients for q, k and v")
    for name, got_grad, expected_grad, detached_grad in zip("qkv", got, expected, detached):
        label = f"d(loss)/d{name} of scaled_dot_product_attention(q, k, v, is_causal=True)"
        if got_grad is None:
            fail(f"{label} is None: {name} does not reach the result through autograd. Do not detach it, "
                 "use .data, or rebuild tensors from Python numbers.")
        assert_close(got_grad, expected_grad, label, ("b", "h", "t", "c"),
                     hint="use differentiable torch operations only (no .detach(), .data, .item() or in-place "
                          "writes into tensors autograd needs)",
                     mistakes={"the weights are detached (or built under no_grad): gradients must flow through "
                               "the returned weights too": detached_grad})


@pytest.mark.points(1)
def test_sdpa_fully_blocked_rows_give_zero_output(submission):
    """A query whose keys are all blocked gets all-zero weights and an all-zero output, not NaN."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=5, k_len=6, d=8, salt=147)
    mask = inputs.random_bool_mask(2, 2, 5, 6, salt=148)
    mask[0, 1, 3] = False
    mask[1, :, 0] = False
    text = "scaled_dot_product_attention(q, k, v, mask) with fully blocked rows"
    got = run(submission, text, q, k, v, mask=mask)
    scores = q @ k.transpose(-2, -1) / math.sqrt(8)
    uniform = torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)
    compare(got, reference.sdpa(q, k, v, mask=mask), text,
            hint="rows whose keys are all blocked must give zeros, not NaN (softmax of all -inf is NaN)",
            mistakes={"blocked with a large finite number (finfo.min or -1e9): a fully blocked row then gets "
                      "uniform weights 1/Tk and the mean of v instead of zeros": (uniform @ v, uniform)})
    blocked_rows = ~mask.any(-1, keepdim=True)
    assert_zero_where(got[0], blocked_rows, "output of a fully blocked query", OUT_DIMS)


@pytest.mark.points(1)
def test_sdpa_leaves_its_inputs_unchanged(submission):
    """scaled_dot_product_attention does not modify q, k, v or the mask in place."""
    q, k, v = inputs.qkv(lead=(2, 2), q_len=5, k_len=5, d=8, salt=149)
    allowed = inputs.random_bool_mask(2, 2, 5, 5, salt=150)
    names = ["q", "k", "v", "mask"]
    for mask in (allowed, inputs.additive_mask(allowed, salt=151)):
        submission.scaled_dot_product_attention(q, k, v, mask, True)
        assert_unchanged([q, k, v, mask], submission.last_args_after[:4], names,
                         "scaled_dot_product_attention(q, k, v, mask, is_causal=True)")


@pytest.mark.points(1)
def test_sdpa_rejects_k_and_v_with_different_lengths(submission):
    """k [..., Tk, d] and v [..., Tk', dv] with Tk != Tk' raise ValueError."""
    q, k, _ = inputs.qkv(lead=(2, 3), q_len=4, k_len=6, d=8, salt=152)
    v = inputs.randn(2, 3, 5, 8, salt=153)
    text = "scaled_dot_product_attention(q [2, 3, 4, 8], k [2, 3, 6, 8], v [2, 3, 5, 8])"
    try:
        submission.scaled_dot_product_attention(q, k, v)
    except ValueError:
        return
    except NotImplementedError:
        raise
    except Exception as error:
        fail(f"{text} raised {type(error).__name__}: {error}; expected ValueError.\n"
             "Hint: call the given _check_qkv(q, k, v) first.")
    fail(f"{text} did not raise: 6 keys but 5 values.\nHint: call the given _check_qkv(q, k, v) first.")
