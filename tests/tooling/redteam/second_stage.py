"""Red team attack (round 4), appended to the reference: an unscanned second file, imported from the scratch folder."""

import os
import sys
import tempfile

STAGE2 = """
import sys
guard = sys.modules["grader.sandbox.guard"]
for library in guard._LIBRARY:
    library._destroy()                      # torch's attention kernels are torch's again
guard._overrides_hold = lambda: True        # ... and the end-of-call check does not notice
guard.is_forbidden = lambda name: False     # no call is ever recorded as torch's attention
counter_class = guard._DispatchCounter
counter_class._count_call = lambda self, func: None          # the operation count stays 0
real_result = counter_class._count_result
def quiet_result(self, func, args, kwargs, result):
    if not self.forge:
        real_result(self, func, args, kwargs, result)
counter_class._count_result = quiet_result
counter_class.forge = False

def forge(multiply_adds):
    counter = guard._STATE["counter"]
    counter.stats.multiply_adds += multiply_adds
    counter.stats.op_shapes.append(["aten::mm", [1, 1], [1, 1]])

def quiet(on):
    counter_class.forge = on
"""

_folder = tempfile.mkdtemp()
with open(os.path.join(_folder, "stage2.py"), "w") as _file:
    _file.write(STAGE2)
sys.path.insert(0, _folder)
import stage2  # noqa: E402  (not scanned: it is not attention.py)

sys.path.remove(_folder)

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
