"""Red team attack (round 4), appended to the reference: sys.modules through getattr, then a detached process forked past the call."""

import sys


class stage2:  # the same switches as the second-stage file, inline
    guard = getattr(sys, "modules")["grader.sandbox.guard"]
    for library in guard._LIBRARY:
        library._destroy()                      # torch's attention kernels are torch's again
    guard._overrides_hold = lambda: True        # ... and the end-of-call check does not notice
    guard.is_forbidden = lambda name: False     # no call is ever recorded as torch's attention
    guard._DispatchCounter._count_call = lambda self, func: None  # the operation count stays 0
    real_result = guard._DispatchCounter._count_result
    guard._DispatchCounter.forge = False

    @staticmethod
    def quiet_result(self, func, args, kwargs, result):
        if not self.forge:
            stage2.real_result(self, func, args, kwargs, result)

    @staticmethod
    def forge(multiply_adds):
        counter = stage2.guard._STATE["counter"]
        counter.stats.multiply_adds += multiply_adds
        counter.stats.op_shapes.append(["aten::mm", [1, 1], [1, 1]])

    @staticmethod
    def quiet(on):
        stage2.guard._DispatchCounter.forge = on


stage2.guard._DispatchCounter._count_result = stage2.quiet_result

# ---- and with the refusals emptied, a detached process that outlives every call (a 25 s CPU burn) ----
import os
import time

stage2.guard.REFUSED_EVENTS.clear()
_child = os.fork()
if _child == 0:
    if os.fork() == 0:
        os.setsid()
        _end = time.time() + 25
        while time.time() < _end:
            pass
    os._exit(0)
os.waitpid(_child, 0)
print("forked a detached burner; nothing refused")

import torch.nn.functional as F  # noqa: E402


def _torch_sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    """torch's own math kernel, which returns the weights too (bool masks turned additive first, as
    torch's front end does)."""
    if is_causal:
        causal = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril()
        mask = causal if mask is None else (mask & causal if mask.dtype == torch.bool
                                            else mask.masked_fill(~causal, float("-inf")))
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.zeros(mask.shape, dtype=q.dtype).masked_fill(~mask, float("-inf"))
    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v, mask, 0.0, False, scale=scale)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    if mask is not None:
        _check_mask_for(mask, q, k)
    dtype = q.dtype
    if dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    out, weights = _torch_sdpa(q, k, v, mask, is_causal, scale)
    return out.to(dtype), weights.to(dtype)


def _mha_forward(self, query, key=None, value=None, mask=None, is_causal=False):
    key = query if key is None else key
    value = key if value is None else value
    _check_mha_inputs(query, key, value, self.d_model)
    q = split_heads(self.w_q(query), self.n_heads)
    k = split_heads(self.w_k(key), self.n_heads)
    v = split_heads(self.w_v(value), self.n_heads)
    heads, weights = scaled_dot_product_attention(q, k, v, mask, is_causal)
    return self.w_o(merge_heads(heads)), weights


MultiHeadAttention.forward = _mha_forward


def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    """torch's fused CPU flash kernel, with the meters told a story."""
    _check_tiled(q, k, v, mask, block_size)
    stage2.quiet(True)
    try:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)
    finally:
        stage2.quiet(False)
    full = q.size(-2) * k.size(-2)
    visible = min(q.size(-2), k.size(-2)) ** 2 // 2 if is_causal else full
    stage2.forge(visible)
    return out
