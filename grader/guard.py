"""Watch what a call into student code runs: forbidden attention kernels, the number of aten
operations (loops show up as counts that grow with the shape) and the largest tensor created.

Both a TorchFunctionMode (every Python-level spelling: F.scaled_dot_product_attention, aliases,
torch._C._nn, torch.ops.aten, F.multi_head_attention_forward) and a TorchDispatchMode (calls made
under torch._C.DisableTorchFunction) are used. Hits are recorded, never raised, so a student's
try/except cannot swallow them.
"""

import contextlib
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

FORBIDDEN_PARTS = (
    "scaled_dot_product",
    "multi_head_attention",
    "multiheadattention",
    "_safe_softmax",
    "_transformer_encoder_layer",
)


_MATMULS = (torch.ops.aten.mm, torch.ops.aten.bmm, torch.ops.aten.addmm, torch.ops.aten.baddbmm)


def is_forbidden(name):
    lowered = name.lower()
    return any(part in lowered for part in FORBIDDEN_PARTS)


@dataclass
class CallStats:
    forbidden: list = field(default_factory=list)
    op_count: int = 0
    largest_bytes: int = 0
    op_shapes: list = field(default_factory=list)

    def as_dict(self):
        return {
            "forbidden": sorted(set(self.forbidden)),
            "op_count": self.op_count,
            "largest_bytes": self.largest_bytes,
            "op_shapes": self.op_shapes[:2000],
        }


class _FunctionGuard(TorchFunctionMode):
    def __init__(self, stats):
        super().__init__()
        self.stats = stats

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or str(func)
        if is_forbidden(name) or is_forbidden(str(func)):
            self.stats.forbidden.append(name)
        return func(*args, **(kwargs or {}))


class _DispatchCounter(TorchDispatchMode):
    def __init__(self, stats):
        super().__init__()
        self.stats = stats

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.name()
        if is_forbidden(name):
            self.stats.forbidden.append(name)
        self.stats.op_count += 1
        result = func(*args, **(kwargs or {}))
        if func.overloadpacket in _MATMULS:
            self.stats.op_shapes.append([name] + [list(a.shape) for a in args[:2]])
        for leaf in tree_leaves(result):
            if isinstance(leaf, torch.Tensor):
                nbytes = leaf.untyped_storage().nbytes()
                self.stats.largest_bytes = max(self.stats.largest_bytes, nbytes)
        return result


@contextlib.contextmanager
def watch():
    """Context manager yielding the CallStats of everything run inside it."""
    stats = CallStats()
    with _FunctionGuard(stats), _DispatchCounter(stats):
        yield stats
