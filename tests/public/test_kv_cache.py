"""Bonus task `kv_cache`: KVCache(batch_size, n_heads, max_len, d_head, dtype=..., device=None) and
decode_step(mha, x_t [B, 1, d_model], cache) -> output [B, 1, d_model]."""

import pytest
import torch

from grader.sandbox.guard import multiply_adds
from tests.support import inputs, mha, oracle
from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import assert_close, call, call_measured, check_tensor, fail
from tests.support.kv_cache import CACHE_DIMS, DECODE_HINT, OUT_DIMS, decode, decode_mistakes, decode_step, new_cache

pytestmark = pytest.mark.task("kv_cache")
KIB = 2 ** 10
# The cache's own test uses no MultiHeadAttention: a broken one is not what to fix first there.
BUILDS_ON = {"test_append_writes_new_positions_and_returns_every_stored_one": ()}
@pytest.mark.points(1)
def test_append_writes_new_positions_and_returns_every_stored_one(submission):
    """KVCache(2, 3, 10, 4) starts empty (length 0) with float32 buffers [2, 3, 10, 4]; append(k, v) with
    k, v [B, H, T_new, d_head] stores them after the stored positions, advances length and returns
    (keys, values) [B, H, length, d_head] of every stored position."""
    cache = new_cache(submission, 2, 3, 10, 4)
    for name in ("keys", "values"):
        check_tensor(getattr(cache, name), f"KVCache(2, 3, 10, 4).{name}", shape=(2, 3, 10, 4), dtype=torch.float32,
                     layout="[B, H, max_len, d_head]",
                     hint="allocate the whole buffer once, in __init__: torch.zeros(B, H, max_len, d_head)")
    if cache.length != 0:
        fail(f"a new KVCache has length {cache.length!r}, expected 0 (no position is stored yet)")
    k1, v1 = inputs.randn(2, 3, 2, 4, salt=500), inputs.randn(2, 3, 2, 4, salt=501)
    k2, v2 = inputs.randn(2, 3, 1, 4, salt=502), inputs.randn(2, 3, 1, 4, salt=503)
    call(cache.append, "cache.append(k1, v1) with 2 positions", k1, v1)
    result = call(cache.append, "cache.append(k2, v2) with 1 position", k2, v2)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"cache.append(k, v) should return the pair (keys, values), got {type(result).__name__}")
    stored = {"keys": torch.cat([k1, k2], dim=2), "values": torch.cat([v1, v2], dim=2)}
    for got, name, other in ((result[0], "keys", "values"), (result[1], "values", "keys")):
        expected = stored[name]
        whole_buffer = torch.cat([expected, expected.new_zeros(2, 3, 7, 4)], dim=2)
        assert_close(got, expected, f"the {name} returned by the second append", CACHE_DIMS,
                     layout="[B, H, length, d_head] (length = 3)",
                     hint="write at positions length .. length + T_new - 1, then return buffer[:, :, :length]",
                     mistakes={"the whole buffer was returned, its empty positions too: return the stored positions "
                               "only, buffer[:, :, :length]": whole_buffer,
                               f"the {name} returned hold the {other}: the keys and values share one buffer, or "
                               "were swapped (two buffers, self.keys and self.values; return (keys, values))":
                                   stored[other]})
    if cache.length != 3:
        fail(f"after appending 2 positions then 1, cache.length is {cache.length!r}, expected 3")
    assert_close(cache.keys[:, :, :3], torch.cat([k1, k2], dim=2), "cache.keys[:, :, :3]", CACHE_DIMS,
                 hint="write into the preallocated buffer (self.keys[:, :, start:end] = k), do not replace it")


@pytest.mark.points(2)
def test_decoding_token_by_token_equals_the_causal_forward_pass(submission):
    """decode_step on tokens 0, 1, ..., T-1 in turn gives, row by row, mha(x, is_causal=True)'s output."""
    module, params = mha.build(submission, 16, 4, seed=50)
    x = inputs.randn(2, 7, 16, salt=504)
    cache = new_cache(submission, 2, 4, 7, 4)
    got = decode(submission, module, x, cache)
    expected = oracle.mha(params, 4, x, is_causal=True)[0]
    assert_close(got, expected, "the 7 decoded outputs, concatenated", OUT_DIMS, layout="[B, T, d_model]",
                 hint=DECODE_HINT, mistakes=decode_mistakes(submission, params, 4, x))


@pytest.mark.points(1)
def test_a_decode_step_projects_only_the_new_token(submission):
    """Decoding 12 tokens gives the causal forward pass's rows, and the step at length 12 multiplies only the
    new token by w_q, w_k, w_v and w_o: its matrix products do
    about 4 B d_model^2 + 2 B T d_model multiply-adds, not a projection of the whole prefix."""
    batch, d_model, n_heads, length = 2, 16, 4, 12
    module, params = mha.build(submission, d_model, n_heads, seed=51)
    x = inputs.randn(batch, length, d_model, salt=505)
    cache = new_cache(submission, batch, n_heads, length, d_model // n_heads)
    earlier = decode(submission, module, x[:, :-1], cache)
    last, measured = decode_step(submission, module, x[:, -1:], cache, "decode_step(mha, x_last[:, 0:1], cache)")
    assert_close(torch.cat([earlier, last], dim=1), oracle.mha(params, n_heads, x, is_causal=True)[0],
                 f"the {length} decoded outputs, concatenated", OUT_DIMS, layout="[B, T, d_model]",
                 hint=DECODE_HINT, mistakes=decode_mistakes(submission, params, n_heads, x))
    needed = 4 * batch * d_model * d_model + 2 * batch * length * d_model
    prefix = 3 * batch * length * d_model * d_model
    if measured.multiply_adds > 1.5 * needed:
        largest = max(measured.op_shapes, key=lambda op: multiply_adds(op[1], op[2]))
        fail(f"decode_step at length {length} (B={batch}, d_model={d_model}) ran matrix products totalling "
             f"{measured.multiply_adds:,} multiply-adds (for example {largest[0]} {largest[1]} x {largest[2]}); "
             f"projecting only the new token needs about {needed:,}, projecting the whole prefix again about "
             f"{prefix:,}.\nLikely cause: the whole prefix is projected again at every step.\nHint: the cache already holds the keys and values of the earlier tokens: apply "
             "w_q, w_k and w_v to x_t [B, 1, d_model] only.")


@pytest.mark.points(1)
def test_append_returns_views_and_two_caches_keep_two_sequences_apart(submission):
    """After 90 stored positions, append(k, v) of one more creates nothing as large as the stored keys: it returns
    views of the buffers, not copies. Then one module decodes two sequences in alternation, each with its own
    cache, and each gives its own causal forward pass: nothing about a sequence is kept on the module."""
    batch, n_heads, d_head, prefix = 2, 3, 8, 90
    cache = new_cache(submission, batch, n_heads, 100, d_head)
    call(cache.append, f"cache.append(k, v) with {prefix} positions", inputs.randn(batch, n_heads, prefix, d_head,
         salt=506), inputs.randn(batch, n_heads, prefix, d_head, salt=507))
    k_new, v_new = inputs.randn(batch, n_heads, 1, d_head, salt=508), inputs.randn(batch, n_heads, 1, d_head, salt=509)
    result, measured = call_measured(submission, cache.append, "cache.append(k, v) of one position", k_new, v_new)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        fail(f"cache.append(k, v) should return the pair (keys, values), got {type(result).__name__}")
    stored = batch * n_heads * (prefix + 1) * d_head * 4
    if measured.largest_bytes >= stored / 2:
        fail(f"cache.append(k, v) of one position after {prefix} created a {measured.largest_bytes / KIB:.1f} KiB "
             f"tensor; the stored keys [{batch}, {n_heads}, {prefix + 1}, {d_head}] are {stored / KIB:.1f} KiB.\n"
             "Likely cause: append copies the stored positions (a .clone(), torch.cat or .contiguous() of the "
             "buffers): return views of the buffers, self.keys[:, :, :length]; a copy of the whole prefix at every "
             "step is what the cache is there to avoid.")
    module, params = mha.build(submission, 12, 3, seed=52)
    xs = {"a": inputs.randn(1, 3, 12, salt=510), "b": inputs.randn(1, 3, 12, salt=511)}
    caches = {name: new_cache(submission, 1, 3, 3, 4) for name in xs}
    outputs = {name: [] for name in xs}
    for t in range(3):
        for name in xs:
            outputs[name].append(decode(submission, module, xs[name][:, t : t + 1], caches[name], name=f"x_{name}"))
    for name in xs:
        assert_close(torch.cat(outputs[name], dim=1), oracle.mha(params, 3, xs[name], is_causal=True)[0],
                     f"sequence {name}, decoded in alternation with the other one (its own cache)", OUT_DIMS,
                     hint="keep everything about a sequence in the cache passed to decode_step, nothing on the "
                          "module or in a global")
