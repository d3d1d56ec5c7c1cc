"""Building a student's MultiHeadAttention with known weights, comparing it with torch's, and naming
the classic mistakes when its result equals what one of them computes."""

import math

import pytest
import torch
import torch.nn.functional as F

from tests.support import inputs, oracle
from tests.support.feedback import assert_close, call, check_tensor, fail

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
    if not isinstance(got, torch.Tensor) or not isinstance(candidate, torch.Tensor):
        return False
    if got.shape != candidate.shape or not got.dtype.is_floating_point:
        return False
    tolerance = oracle.TOLERANCES.get(got.dtype, oracle.TOLERANCES[torch.float32])
    return bool(torch.allclose(got, candidate.to(got.dtype), **tolerance))


def _diagnose(got, expected, mistakes):
    """The explanation of the one mistake whose (output, weights) got equals, else None. A candidate
    that equals torch's result, or another candidate, is dropped: it cannot tell mistakes apart."""
    output, weights = got
    heads = expected[1].size(1)
    d_head = expected[0].size(-1) // heads
    if isinstance(weights, torch.Tensor) and weights.dim() == 4 and weights.size(1) == d_head != heads:
        return (f"the input was split into d_head={d_head} heads of {heads} features: "
                "split_heads(x, self.n_heads), not split_heads(x, d_model // n_heads)")
    distinct = {}
    for explanation, candidate in mistakes.items():
        if all(_same(part, known) for part, known in zip(candidate, expected)):
            continue
        if any(all(_same(part, other) for part, other in zip(candidate, seen)) for seen in distinct.values()):
            continue
        distinct[explanation] = candidate
    found = [explanation for explanation, (bad_output, bad_weights) in distinct.items()
             if _same(output, bad_output) and _same(weights, bad_weights)]
    return found[0] if len(found) == 1 else None


def compare(submission, got, expected, text, hint=None, mistakes=None):
    """mistakes: {explanation: (output, weights) of a known buggy module}, named when got matches and
    the functions MultiHeadAttention builds on are right (else their bug, not forward's, is the cause)."""
    cause = _diagnose(got, expected, mistakes or {})
    try:
        _compare(got, expected, text, hint)
    except pytest.fail.Exception as failure:
        if cause is None or not building_blocks_work(submission):
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


# -- what the classic mistakes compute ------------------------------------------------------------

def buggy(params, n_heads, query, key=None, value=None, mask=None, is_causal=False, *, scale=None,
          keys_with="w_k", values_from="value", transpose_back=True, with_w_o=True):
    """(output, weights) of multi-head attention built on torch's SDPA, with one of the classic slips."""
    if key is None:
        key = query
    if value is None:
        value = key
    sources = {"value": value, "key": key, "query": query}

    def project(x, name):  # [B, T, d_model] -> [B, H, T, d_head]
        projected = F.linear(x, params[f"{name}.weight"], params.get(f"{name}.bias"))
        return oracle.split_heads(projected, n_heads)

    q = project(query, "w_q")
    k = project(key, keys_with)
    v = project(sources[values_from], "w_v")
    heads, weights = oracle.sdpa(q, k, v, mask=mask, is_causal=is_causal, scale=scale)
    if transpose_back:
        merged = oracle.merge_heads(heads)  # (B, Tq, d_model)
    else:
        merged = heads.reshape(query.size(0), query.size(1), -1)  # (B, Tq, d_model), heads mixed up
    if not with_w_o:
        return merged, weights
    return F.linear(merged, params["w_o.weight"], params.get("w_o.bias")), weights


def classic_mistakes(params, n_heads, query, key=None, value=None, mask=None, is_causal=False):
    """{explanation: (output, weights)} of the classic MultiHeadAttention slips for this call."""
    d_model = query.size(-1)
    args = (params, n_heads, query, key, value)
    found = {
        f"the scores were scaled by 1/sqrt(d_model) = 1/sqrt({d_model}); each head's scale is "
        f"1/sqrt(d_head) = 1/sqrt({d_model // n_heads}) (leave scale=None)":
            buggy(*args, mask=mask, is_causal=is_causal, scale=1 / math.sqrt(d_model)),
        "the heads were merged without the transpose: [B, H, T, d_head] must go back to [B, T, H, d_head] "
        "(transpose(1, 2)) before flattening": buggy(*args, mask=mask, is_causal=is_causal, transpose_back=False),
        "w_o was forgotten: apply self.w_o to the merged heads": buggy(*args, mask=mask, is_causal=is_causal,
                                                                        with_w_o=False),
        "the keys were projected with w_q: project key with w_k": buggy(*args, mask=mask, is_causal=is_causal,
                                                                         keys_with="w_q"),
        "the values were projected from key, not value: v = w_v(value)":
            buggy(*args, mask=mask, is_causal=is_causal, values_from="key"),
    }
    if key is not None and value is None and key.shape == query.shape:
        found["value defaulted to query; it defaults to key"] = buggy(params, n_heads, query, key, query, mask=mask,
                                                                     is_causal=is_causal)
    if mask is None:
        found["key and value were ignored (self-attention over query only): project key with w_k and value "
              "with w_v"] = buggy(params, n_heads, query, is_causal=is_causal)
    expected_output, expected_weights = buggy(*args, mask=mask, is_causal=is_causal)
    found["the weights were averaged over the heads: return the per-head weights [B, H, Tq, Tk]"] = (
        expected_output, expected_weights.mean(dim=1))
    if mask is not None:
        found["the mask was not passed on to scaled_dot_product_attention"] = buggy(*args, is_causal=is_causal)
        if mask.dtype == torch.bool:
            found["the mask is inverted: True means ALLOWED"] = buggy(*args, mask=~mask, is_causal=is_causal)
    if is_causal:
        found["is_causal was not passed on to scaled_dot_product_attention"] = buggy(*args, mask=mask)
    return found

