"""Bonus task `kv_cache` (hidden): float64 without bias, what the cache holds after decoding, no copy of
the cached prefix, and two sequences decoded with one module and two caches."""

import pytest
import torch
import torch.nn.functional as F

from tests.support import inputs, mha, oracle
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import assert_close, call, fail
from tests.support.kv_cache import CACHE_DIMS, DECODE_HINT, OUT_DIMS, decode, decode_mistakes, decode_step, new_cache

pytestmark = pytest.mark.task("kv_cache")
KIB = 1024


def step_after_prefix(params, n_heads, x_new, cached_keys, cached_values):
    """torch's output for x_new [B, 1, d_model] attending over the cached positions and itself."""
    def project(name):
        return oracle.split_heads(F.linear(x_new, params[f"{name}.weight"], params[f"{name}.bias"]), n_heads)

    keys = torch.cat([cached_keys, project("w_k")], dim=2)  # (B, H, T, d_head)
    values = torch.cat([cached_values, project("w_v")], dim=2)  # (B, H, T, d_head)
    heads, _ = oracle.sdpa(project("w_q"), keys, values)  # (B, H, 1, d_head)
    return F.linear(oracle.merge_heads(heads), params["w_o.weight"], params["w_o.bias"])


@pytest.mark.points(2)
def test_decoding_in_float64_without_bias_equals_the_causal_forward_pass(submission):
    """With MultiHeadAttention(24, 3, bias=False) in float64 and a float64 cache, decoding 10 tokens one
    by one gives mha(x, is_causal=True)'s output."""
    module, params = mha.build(submission, 24, 3, bias=False, dtype=torch.float64, seed=52)
    x = inputs.randn(3, 10, 24, dtype=torch.float64, salt=510)
    cache = new_cache(submission, 3, 3, 12, 8, dtype=torch.float64)
    got = decode(submission, module, x, cache)
    expected = oracle.mha(params, 3, x, is_causal=True, bias=False)[0]
    assert_close(got, expected, "the 10 decoded outputs in float64, concatenated", OUT_DIMS,
                 layout="[B, T, d_model]", hint=DECODE_HINT + "; create the buffers with the given dtype",
                 mistakes=decode_mistakes(submission, params, 3, x))


@pytest.mark.points(1)
def test_the_cache_holds_the_keys_and_values_of_every_decoded_token(submission):
    """After decoding 5 tokens, cache.length is 5 and cache.keys[:, :, :5] / cache.values[:, :, :5] are
    w_k(x) and w_v(x) split into heads."""
    module, params = mha.build(submission, 16, 4, seed=53)
    x = inputs.randn(2, 5, 16, salt=511)
    cache = new_cache(submission, 2, 4, 8, 4)
    decode(submission, module, x, cache)
    if cache.length != 5:
        fail(f"after 5 decode steps cache.length is {cache.length!r}, expected 5: append must advance it")
    for name, layer in (("keys", "w_k"), ("values", "w_v")):
        expected = oracle.split_heads(F.linear(x, params[f"{layer}.weight"], params[f"{layer}.bias"]), 4)
        assert_close(getattr(cache, name)[:, :, :5], expected, f"cache.{name}[:, :, :5] after 5 steps",
                     CACHE_DIMS, layout="[B, H, T, d_head]",
                     hint=f"store split_heads(mha.{layer}(x_t), H) of each new token at position length")


@pytest.mark.points(1)
def test_a_decode_step_does_not_copy_the_cached_prefix(submission):
    """At length 151 (B=2, H=4, d_head=16), a decode step returns torch's output and nothing it creates is
    as large as the cached keys:
    the new key and value are written into the buffers and attention reads the buffers in place."""
    batch, n_heads, d_head, prefix = 2, 4, 16, 150
    module, params = mha.build(submission, n_heads * d_head, n_heads, seed=54)
    cache = new_cache(submission, batch, n_heads, 160, d_head)
    cached_keys = inputs.randn(batch, n_heads, prefix, d_head, salt=512)
    cached_values = inputs.randn(batch, n_heads, prefix, d_head, salt=513)
    call(cache.append, f"cache.append(k, v) with {prefix} positions", cached_keys, cached_values)
    x_new = inputs.randn(batch, 1, n_heads * d_head, salt=514)
    got, measured = decode_step(submission, module, x_new, cache, "decode_step(mha, x_new[:, 0:1], cache)")
    largest = measured.largest_bytes
    assert_close(got, step_after_prefix(params, n_heads, x_new, cached_keys, cached_values),
                 f"decode_step(mha, x_new, cache) after {prefix} cached positions", OUT_DIMS,
                 layout="[B, 1, d_model]", hint=DECODE_HINT)
    copy = batch * n_heads * (prefix + 1) * d_head * 4
    if largest >= copy / 2:
        fail(f"decode_step at length {prefix + 1} created a {largest / KIB:.1f} KiB tensor; a copy of the cached keys "
             f"[{batch}, {n_heads}, {prefix + 1}, {d_head}] is {copy / KIB:.1f} KiB, while the step itself only needs "
             f"the scores [{batch}, {n_heads}, 1, {prefix + 1}] ({batch * n_heads * (prefix + 1) * 4 / KIB:.1f} KiB).\n"
             "Hint: write the new key into the preallocated buffer (self.keys[:, :, start:end] = k) and return "
             "slices of it; torch.cat, .clone() or .contiguous() copy the whole prefix at every step, and so does "
             "an operation on all the cached keys (k.transpose(-2, -1) * scale, k.to(dtype)): scale the one query.")


@pytest.mark.points(1)
def test_two_caches_decode_two_sequences_independently(submission):
    """One module with two caches decodes two sequences in alternation; each equals its own causal forward pass."""
    module, params = mha.build(submission, 16, 4, seed=55)
    xs = {"a": inputs.randn(2, 4, 16, salt=515), "b": inputs.randn(2, 4, 16, salt=516)}
    caches = {"a": new_cache(submission, 2, 4, 4, 4), "b": new_cache(submission, 2, 4, 4, 4)}
    outputs = {"a": [], "b": []}
    for t in range(4):
        for name in ("a", "b"):
            outputs[name].append(decode(submission, module, xs[name][:, t : t + 1], caches[name], name=f"x_{name}_t"))
    for name in ("a", "b"):
        assert_close(torch.cat(outputs[name], dim=1), oracle.mha(params, 4, xs[name], is_causal=True)[0],
                     f"sequence {name}, decoded in alternation with the other one", OUT_DIMS,
                     hint="keep every per-sequence state in the cache passed to decode_step, nothing on the "
                          "module or in a global")
