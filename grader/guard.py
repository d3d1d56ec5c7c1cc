"""Watch what a call into student code runs: forbidden attention kernels, the number of aten
operations (loops show up as counts that grow with the shape) and the largest tensor created.

Per call: `op_count` (aten operations run), `largest_bytes` (the largest storage an operation
newly created: views and in-place results reuse their input's memory and are not counted),
`op_shapes` ([op, shape A, shape B] of each matrix product, A and B being the multiplied operands)
and `multiply_adds` (their total multiply-add count).

Both a TorchFunctionMode (every Python-level spelling: F.scaled_dot_product_attention, aliases,
torch._C._nn, torch.ops.aten, F.multi_head_attention_forward) and a TorchDispatchMode (calls made
under torch._C.DisableTorchFunction) are used. Hits are recorded, never raised, so a student's
try/except cannot swallow them.
"""

import contextlib
import math
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


# Matrix products, by the position of their two multiplied operands: (A, B) for mm/bmm/mv/dot,
# (input, A, B) for addmm/baddbmm/addbmm/addmv. A matmul or einsum of any rank reaches one of these.
_MATMULS = {
    torch.ops.aten.mm: 0, torch.ops.aten.bmm: 0, torch.ops.aten.mv: 0, torch.ops.aten.dot: 0,
    torch.ops.aten.addmm: 1, torch.ops.aten.baddbmm: 1, torch.ops.aten.addbmm: 1, torch.ops.aten.addmv: 1,
}


def multiply_adds(shape_a, shape_b):
    """Multiply-adds of one matrix product: A [..., M, K] times B [..., K, N] (or a vector B [K])."""
    return math.prod(shape_a) * (shape_b[-1] if len(shape_b) >= 2 else 1)


def is_forbidden(name):
    lowered = name.lower()
    return any(part in lowered for part in FORBIDDEN_PARTS)


@dataclass
class CallStats:
    forbidden: list = field(default_factory=list)
    op_count: int = 0
    largest_bytes: int = 0
    op_shapes: list = field(default_factory=list)
    multiply_adds: int = 0

    def as_dict(self):
        return {
            "forbidden": sorted(set(self.forbidden)),
            "op_count": self.op_count,
            "largest_bytes": self.largest_bytes,
            "op_shapes": self.op_shapes[:2000],
            "multiply_adds": self.multiply_adds,
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
        first = _MATMULS.get(func.overloadpacket)
        if first is not None and len(args) >= first + 2:
            shape_a, shape_b = list(args[first].shape), list(args[first + 1].shape)
            self.stats.op_shapes.append([name, shape_a, shape_b])
            self.stats.multiply_adds += multiply_adds(shape_a, shape_b)
        inputs = {_storage_ptr(leaf) for leaf in tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)}
        for leaf in tree_leaves(result):
            pointer = _storage_ptr(leaf) if isinstance(leaf, torch.Tensor) else None
            if pointer is not None and pointer not in inputs:
                nbytes = leaf.untyped_storage().nbytes()
                self.stats.largest_bytes = max(self.stats.largest_bytes, nbytes)
        return result


def _storage_ptr(tensor):
    """Identity of a tensor's memory: views and in-place results share their input's (not new memory)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


@contextlib.contextmanager
def watch():
    """Context manager yielding the CallStats of everything run inside it."""
    stats = CallStats()
    with _FunctionGuard(stats), _DispatchCounter(stats):
        yield stats
