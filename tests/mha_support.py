"""Building a student's MultiHeadAttention with known weights, and comparing it with torch's."""

import torch

from tests import reference
from tests.feedback import assert_close, check_tensor, fail

DIMS = ("b", "i", "f")
WEIGHT_DIMS = ("b", "h", "i", "j")
BUILDS_ON = (". MultiHeadAttention builds on your split_heads, merge_heads and scaled_dot_product_attention: "
             "if their tests fail too, fix those first.")


def build(submission, d_model, n_heads, bias=True, dtype=torch.float32, seed=0):
    """The student's module, in dtype, with seeded weights and non-zero biases; and those weights."""
    module = submission.MultiHeadAttention(d_model, n_heads, bias=bias)
    if dtype == torch.float64:
        module.double()
    params = reference.random_mha_params(d_model, bias=bias, dtype=dtype, seed=seed)
    module.load_params(params)
    return module, params


def run(module, call, *args, **kwargs):
    result = module(*args, **kwargs)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"{call} should return (output, weights), got {type(result).__name__}")
    return result


def compare(got, expected, call, hint=None, mistakes=None):
    """mistakes: {explanation: (output, weights) of a known buggy module}, named when got matches."""
    output, weights = got
    expected_output, expected_weights = expected
    check_tensor(weights, f"{call} weights", shape=expected_weights.shape, layout="[B, H, Tq, Tk] (one map per head)",
                 hint="return the per-head weights from scaled_dot_product_attention, not their mean")
    mistakes = mistakes or {}
    assert_close(weights, expected_weights, f"{call} weights", WEIGHT_DIMS,
                 hint=(hint or "project with w_q and w_k, split_heads, then scaled_dot_product_attention") + BUILDS_ON,
                 mistakes={explanation: pair[1] for explanation, pair in mistakes.items()})
    assert_close(output, expected_output, f"{call} output", DIMS,
                 hint=(hint or "merge the heads, then apply w_o") + BUILDS_ON,
                 mistakes={explanation: pair[0] for explanation, pair in mistakes.items()})
