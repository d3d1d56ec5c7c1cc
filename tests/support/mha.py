"""Building a student's MultiHeadAttention with known weights, comparing it with torch's, and naming
the classic mistakes when its result equals what one of them computes."""

import pytest
import torch

from tests.support import hypotheses, inputs, oracle
from tests.support.feedback import assert_close, call, check_tensor, close, diagnose, fail

DIMS = ("b", "i", "f")
WEIGHT_DIMS = ("b", "h", "i", "j")
PROJECTIONS = ("w_q", "w_k", "w_v", "w_o")
BUILDS_ON = (". MultiHeadAttention builds on your split_heads, merge_heads and scaled_dot_product_attention: "
             "if their tests fail too, fix those first.")


def build(submission, d_model, n_heads, bias=True, dtype=torch.float32, seed=0):
    """The student's module, in dtype, with seeded weights and non-zero biases; and those weights."""
    module = submission.MultiHeadAttention(d_model, n_heads, bias=bias)
    if dtype == torch.float64:
        module.double()
    params = oracle.random_mha_params(d_model, bias=bias, dtype=dtype, seed=seed)
    module.load_params(params)
    return module, params


def check_projections(submission, d_model, n_heads, bias=True):
    """MultiHeadAttention(d_model, n_heads, bias=bias) has nn.Linear w_q, w_k, w_v, w_o of
    [d_model, d_model], with a bias [d_model] exactly when bias is True."""
    text = f"MultiHeadAttention({d_model}, {n_heads}{'' if bias else ', bias=False'})"
    module = submission.MultiHeadAttention(d_model, n_heads, bias=bias)
    for name in PROJECTIONS:
        try:
            layer = getattr(module, name)
            weight, layer_bias = layer.weight, layer.bias
        except Exception:
            fail(f"{text} has no nn.Linear attribute `{name}`.\n"
                 f"Hint: self.{name} = nn.Linear(d_model, d_model, bias=bias) in __init__.")
        check_tensor(weight, f"{text}.{name}.weight", shape=(d_model, d_model), layout="[d_model, d_model]")
        if bias:
            check_tensor(layer_bias, f"{text}.{name}.bias", shape=(d_model,), layout="[d_model]")
        elif layer_bias is not None:
            fail(f"{text}.{name}.bias is a tensor of shape {tuple(layer_bias.shape)}, expected None.\n"
                 "Likely cause: the bias flag is ignored: create the layers with "
                 "nn.Linear(d_model, d_model, bias=bias).")


def run(module, text, *args, **kwargs):
    """module(*args, **kwargs), which must be a pair (output, weights); a .view() on a non-contiguous
    tensor is named as such."""
    result = call(module, text, *args, hint="project, split_heads, attend, merge_heads, w_o", **kwargs)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"{text} should return (output, weights), got {type(result).__name__}")
    return result


def run_twice(module, text, *args, **kwargs):
    """The module's result, after checking that a second identical call gives the same result."""
    first = run(module, text, *args, **kwargs)
    second = run(module, text + ", called again", *args, **kwargs)
    for got, previous, part in zip(second, first, ("output", "weights")):
        if isinstance(got, torch.Tensor) and isinstance(previous, torch.Tensor) and not _same(got, previous):
            fail(f"{text} gave a different {part} when called again with the same input.\n"
                 "Likely cause: dropout (or other randomness) is active in forward: the lab's module has no "
                 "dropout, the same input must give the same result.")
    return first


def _same(got, candidate):
    return close(got, candidate)


def _diagnose(got, expected, mistakes):
    """The explanation of the one mistake that explains got (feedback.diagnose), else None; a split into
    d_head heads shows in the weights' shape alone."""
    output, weights = got
    heads = expected[1].size(1)
    d_head = expected[0].size(-1) // heads
    if isinstance(weights, torch.Tensor) and weights.dim() == 4 and weights.size(1) == d_head != heads:
        return (f"the input was split into d_head={d_head} heads of {heads} features: "
                "split_heads(x, self.n_heads), not split_heads(x, d_model // n_heads)")
    return diagnose(tuple(got), tuple(expected), mistakes)


def compare(submission, got, expected, text, hint=None, mistakes=None):
    """mistakes: {explanation: (output, weights) of a known wrong module}, named when it alone explains got."""
    try:
        _compare(got, expected, text, hint)
    except pytest.fail.Exception as failure:
        cause = _diagnose(got, expected, mistakes or {})  # only a failing comparison reads the mistakes
        if cause is None:
            raise
        fail(str(failure.msg).split("\nHint:")[0] + f"\nLikely cause: {cause}")


def building_blocks_work(submission):
    """True when split_heads, merge_heads and scaled_dot_product_attention (without a mask, with bool,
    float and padding masks, with is_causal) return torch's results on small inputs."""
    x = inputs.randn(2, 3, 12, salt=90)
    heads = inputs.randn(2, 3, 4, 5, salt=91)
    q, k, v = inputs.qkv(lead=(2, 3), q_len=4, k_len=6, d=5, salt=92)
    bool_mask = inputs.random_bool_mask(4, 6, salt=93)
    float_mask = inputs.additive_mask(bool_mask, salt=94)
    padding = inputs.padding_mask([6, 3], 6)
    sdpa_cases = ((None, False), (bool_mask, False), (bool_mask, True), (float_mask, False), (padding, False),
                  (None, True))
    try:
        checks = [(submission.split_heads(x, 3), oracle.split_heads(x, 3)),
                  (submission.merge_heads(heads), oracle.merge_heads(heads))]
        for mask, is_causal in sdpa_cases:
            got = submission.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
            expected = oracle.sdpa(q, k, v, mask=mask, is_causal=is_causal)
            if not isinstance(got, (tuple, list)) or len(got) != 2:
                return False
            checks += list(zip(got, expected))
    except Exception:
        return False
    return all(_same(value, known) for value, known in checks)


def _compare(got, expected, text, hint):
    output, weights = got
    expected_output, expected_weights = expected
    check_tensor(weights, f"{text} weights", shape=expected_weights.shape, layout="[B, H, Tq, Tk] (one map per head)",
                 hint="return the per-head weights from scaled_dot_product_attention, not their mean")
    assert_close(weights, expected_weights, f"{text} weights", WEIGHT_DIMS,
                 hint=(hint or "project with w_q and w_k, split_heads, then scaled_dot_product_attention") + BUILDS_ON)
    assert_close(output, expected_output, f"{text} output", DIMS,
                 hint=(hint or "merge the heads, then apply w_o") + BUILDS_ON)


# -- what the classic mistakes compute: tests/support/hypotheses.py, kind "mha" ----------------------

def classic_mistakes(params, n_heads, query, key=None, value=None, mask=None, is_causal=False):
    """{explanation: (output, weights)} of the known wrong MultiHeadAttention for this call."""
    return hypotheses.as_mistakes("mha", params=params, n_heads=n_heads, query=query, key=key, value=value,
                                  mask=mask, is_causal=is_causal)
