"""Red team attack (round 4), appended to the reference: no module access at all; torch's own registries hand over the grader's objects."""

import weakref

from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

try:  # one refusal, outside any graded call, to learn the class of the guard's refusals
    torch.ops.aten._safe_softmax(torch.zeros(1), 0)
except RuntimeError as error:
    Refusal = type(error)

for _finalizer in list(weakref.finalize._registry):  # torch.library's finalizers keep its Library objects
    _found = _finalizer.peek()
    if _found and isinstance(_found[0], torch.library.Library) and _found[0].ns == "aten":
        _found[0]._destroy()  # torch's attention kernels are torch's again


class _ProbeAnswer(TorchFunctionMode):
    """Stays on the function-mode stack for good: answers the guard's end-of-call probe
    (_safe_softmax of zeros(1)) with the refusal it expects."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if "_safe_softmax" in str(func) and args and args[0].numel() == 1:
            raise Refusal("still replaced, honest")
        return func(*args, **(kwargs or {}))


_ProbeAnswer().__enter__()


class stage2:
    @staticmethod
    def quiet(on):
        counter = _get_current_dispatch_mode_stack()[0]  # the grader's own operation counter
        counter.paused += 1 if on else -1

    @staticmethod
    def forge(multiply_adds):
        _get_current_dispatch_mode_stack()[0].stats.multiply_adds += multiply_adds


def _unrecorded(function):
    """function, with the counter paused and the function guard's record of it wiped."""
    def run(*args, **kwargs):
        stage2.quiet(True)
        try:
            return function(*args, **kwargs)
        finally:
            stage2.quiet(False)
            for mode in torch.overrides._get_current_function_mode_stack():
                if hasattr(mode, "stats"):
                    mode.stats.forbidden.clear()
    return run

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
    out, weights = _unrecorded(_torch_sdpa)(q, k, v, mask, is_causal, scale)
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
    out = _unrecorded(F.scaled_dot_product_attention)(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)
    full = q.size(-2) * k.size(-2)
    visible = min(q.size(-2), k.size(-2)) ** 2 // 2 if is_causal else full
    stage2.forge(visible)
    return out
