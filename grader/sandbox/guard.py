"""Watch what a call into student code runs: the kernels the lab forbids (lab/lab.json), the number of aten
operations (loops show up as counts that grow with the shape) and the largest tensor created.

Per call: `op_count` (aten operations run, plus one per element a tensor hands to Python or takes from it:
tolist(), torch.tensor(), so a Python loop over the values grows the count), `largest_bytes` (the largest
storage an operation newly created, or the largest tensor it filled in place or through out=: views reuse
their input's memory and are not counted), `op_shapes` ([op, shape A, shape B] of each matrix product, A and B
being the multiplied operands; a broadcast elementwise product is one too) and `multiply_adds` (their total
multiply-add count) and `created_on` (by device type, the most elements of a tensor an operation newly created
there: a tensor built on the CPU and then moved to the device asked for shows up on "cpu").

Both a TorchFunctionMode (every Python-level spelling of a forbidden function: torch.nn.functional's,
aliases, torch._C._nn, torch.ops.aten) and a TorchDispatchMode (calls made
under torch._C.DisableTorchFunction) are used. Hits are recorded, never raised, so a student's
try/except cannot swallow them.

Those modes are thread-local, so `install()` adds process-wide rules (every thread, modes popped or
not): the forbidden kernels are replaced (torch.library) by kernels that record and raise; starting
a thread or a process, or loading a C function through ctypes, is refused; during a graded call,
numpy round trips (Tensor.numpy, __array__, torch.from_numpy, DLPack) are refused. Refusals are
recorded in `refused`, so they count even when the student's code catches the error.

The operation counter cannot be hidden the easy ways: it is pushed once and never popped (it counts
only while a call is graded), so after install() torch's functions that pop or push dispatch modes,
exclude the Python dispatch key, redispatch below it or define new operators are replaced everywhere by
refusals that keep no way back to the originals (and gc introspection, which could find them, is refused).
The function guard checks at every torch call of a graded call that the counter is still in place, and
watch() checks it again when the call ends: a call whose operations were hidden from the counter fails.
Entering torch._C.DisableTorchFunction (which blinds that check) is recorded as a refusal as well.
"""

import _posixsubprocess
import _thread
import builtins
import contextlib
import ctypes  # noqa: F401  (imported before install(), so that importing it again is refused)
import dataclasses
import functools
import importlib
import keyword
import math
import re
import sys
import threading
import types
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import DeviceContext
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from grader.lab import LAB

FORBIDDEN = LAB.forbidden  # what the lab forbids (lab/lab.json): name parts, kernels, modules, words
FORBIDDEN_PARTS = tuple(FORBIDDEN["name_parts"])


# Matrix products, by the position of their two multiplied operands: (A, B) for mm/bmm/mv/dot,
# (input, A, B) for addmm/baddbmm/addbmm/addmv. A matmul or einsum of any rank reaches one of these.
_MATMULS = {
    torch.ops.aten.mm: 0, torch.ops.aten.bmm: 0, torch.ops.aten.mv: 0, torch.ops.aten.dot: 0,
    torch.ops.aten.addmm: 1, torch.ops.aten.baddbmm: 1, torch.ops.aten.addbmm: 1, torch.ops.aten.addmv: 1,
}
# torch's own formulas (FLOPs, two per multiply-add) for the products it has one for: mm, addmm, bmm, baddbmm and
# convolution; the rest (mv, dot, addbmm, addmv, a broadcast product) are counted by multiply_adds below.
_TORCH_FORMULAS = {packet: formula for packet, formula in flop_registry.items()
                   if packet in _MATMULS or packet is torch.ops.aten.convolution}


def multiply_adds(shape_a: Sequence[int], shape_b: Sequence[int]) -> int:
    """Multiply-adds of one matrix product: A [..., M, K] times B [..., K, N] (or a vector B [K])."""
    return math.prod(shape_a) * (shape_b[-1] if len(shape_b) >= 2 else 1)


def _torch_multiply_adds(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None, result: Any) -> int:
    """torch.utils.flop_counter's count for an operation it has a formula for, in multiply-adds."""
    return _TORCH_FORMULAS[func.overloadpacket](*args, **(kwargs or {}), out_val=result) // 2


def is_forbidden(name: str) -> bool:
    """Read as a plain str (str's own method): a subclass's lower(), __hash__ or __eq__ takes no part."""
    return _is_forbidden(name if type(name) is str else str.__str__(name))


@functools.lru_cache(maxsize=8192)  # asked on every torch call of the student's code, of a few hundred names
def _is_forbidden(name: str) -> bool:
    lowered = name.lower()
    return any(part in lowered for part in FORBIDDEN_PARTS)


@dataclass
class CallStats:
    forbidden: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    op_count: int = 0
    largest_bytes: int = 0
    op_shapes: list[list[Any]] = field(default_factory=list)  # [op name, shape A, shape B]
    multiply_adds: int = 0
    written: dict[int, int] = field(default_factory=dict)  # storage -> bytes written into it in place or by out=
    created_on: dict[str, int] = field(default_factory=dict)  # device type -> most elements of a new tensor there

    def as_dict(self) -> dict[str, Any]:
        return {
            "forbidden": sorted(set(self.forbidden)),
            "refused": sorted(set(self.refused)),
            "op_count": self.op_count,
            "largest_bytes": self.largest_bytes,
            "op_shapes": self.op_shapes[:2000],
            "multiply_adds": self.multiply_adds,
            "created_on": dict(self.created_on),
        }


class _FunctionGuard(TorchFunctionMode):
    def __init__(self, stats: CallStats) -> None:
        super().__init__()
        self.stats = stats

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or str(func)
        if is_forbidden(name) or is_forbidden(str(func)):
            self.stats.forbidden.append(name)
        if not _STATE["bookkeeping"] and not counter_in_place():
            _REFUSALS.append(HIDDEN_MESSAGE)
        return func(*args, **(kwargs or {}))


class _DispatchCounter(TorchDispatchMode):
    """Pushed once (`_counter()`) and never popped: counts the operations of the graded call in progress."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """False: torch would otherwise wrap __torch_dispatch__ in dynamo.disable, whose first call imports
        torch._dynamo (1.6 CPU-seconds in every worker, measured); the worker compiles nothing."""
        return False

    def __init__(self) -> None:
        super().__init__()
        self.stats: CallStats | None = None
        self.paused = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        if self.stats is None or self.paused:
            return func(*args, **(kwargs or {}))
        _STATE["bookkeeping"] = True
        try:
            self._count_call(func)
        finally:
            _STATE["bookkeeping"] = False
        result = func(*args, **(kwargs or {}))
        _STATE["bookkeeping"] = True
        try:
            self._count_result(func, args, kwargs, result)
        finally:
            _STATE["bookkeeping"] = False
        return result

    def _count_call(self, func):
        if is_forbidden(func.name()):
            self.stats.forbidden.append(func.name())
        self.stats.op_count += 1

    def _count_result(self, func, args, kwargs, result):
        stats = self.stats
        first = _MATMULS.get(func.overloadpacket)
        if first is not None and len(args) >= first + 2:
            shape_a, shape_b = list(args[first].shape), list(args[first + 1].shape)
            stats.op_shapes.append([func.name(), shape_a, shape_b])
            stats.multiply_adds += (_torch_multiply_adds(func, args, kwargs, result)
                                    if func.overloadpacket in _TORCH_FORMULAS else multiply_adds(shape_a, shape_b))
        elif func.overloadpacket in _PRODUCTS:
            _count_broadcast_product(stats, func, args, result)
        elif func.overloadpacket is torch.ops.aten.convolution and isinstance(result, torch.Tensor):
            stats.op_shapes.append([func.name(), list(result.shape), list(args[1].shape)])
            stats.multiply_adds += _torch_multiply_adds(func, args, kwargs, result)
        outputs = _tensors(result)
        if outputs:
            inputs = {_storage_ptr(leaf) for leaf in _tensors((args, kwargs))}
            for leaf in outputs:
                pointer = _storage_ptr(leaf)
                if pointer is not None and pointer not in inputs:
                    stats.largest_bytes = max(stats.largest_bytes, leaf.untyped_storage().nbytes())
                if not pointer or pointer not in inputs:  # meta tensors have no memory: each may be new
                    device = leaf.device.type
                    stats.created_on[device] = max(stats.created_on.get(device, 0), leaf.numel())
        partial = _PARTIAL_WRITES.get(func.overloadpacket)
        if partial is not None:  # it writes some entries of self only: those are what it fills
            _count_filled(stats, args[0], partial(args) * args[0].element_size())
            return
        for leaf in _written(func, args, kwargs):  # filled in place or through out=: what it fills, counted too
            _count_filled(stats, leaf)


# Elementwise products: one whose result is larger than both factors multiplies every pair of their entries,
# as a matrix product does (q[..., :, None, :] * k[..., None, :, :] before a sum), and counts as that work. A
# factor's size is its distinct entries: a factor broadcast by expand() (stride 0) is as small as before it.
_PRODUCTS = {torch.ops.aten.mul, torch.ops.aten.multiply}


def _distinct_entries(tensor):
    return math.prod(size for size, stride in zip(tensor.shape, tensor.stride(), strict=True) if stride != 0)


def _count_broadcast_product(stats, func, args, result):
    factors = [arg for arg in args[:2] if isinstance(arg, torch.Tensor)]
    if len(factors) != 2 or not isinstance(result, torch.Tensor):
        return
    size = result.numel()
    if size > max(_distinct_entries(factor) for factor in factors):
        stats.op_shapes.append([func.name(), list(result.shape), [1]])
        stats.multiply_adds += size


def _indexed_entries(tensor, indices):
    """How many entries of tensor `tensor[indices]` selects (aten.index_put_'s indices: None keeps a dim whole;
    a bool index counts every entry it covers, an upper bound)."""
    shapes, dim, kept = [], 0, 1
    for index in indices:
        if index is None:
            kept *= tensor.size(dim)
            dim += 1
        elif index.dtype in (torch.bool, torch.uint8):
            shapes.append((index.numel(),))
            dim += index.dim()
        else:
            shapes.append(tuple(index.shape))
            dim += 1
    return math.prod(torch.broadcast_shapes(*shapes)) * kept * math.prod(tensor.shape[dim:])


def _slices(args):
    """The entries of self (args[0]) in the slices index (args[2]) picks along dim (args[1])."""
    self, dim, index = args[0], args[1], args[2]
    return index.numel() * (self.numel() // max(self.size(dim), 1))


def _scattered(args):
    """The entries of self (args[0]) that a scatter's index (args[2]) writes: one per index entry."""
    return args[2].numel()


# In-place operations that write some entries of self only, and how many, from their arguments: a cache's
# index_copy_ of one position fills that position, not the whole buffer.
_PARTIAL_WRITES = {
    torch.ops.aten.index_copy_: _slices, torch.ops.aten.index_add_: _slices, torch.ops.aten.index_fill_: _slices,
    torch.ops.aten.scatter_: _scattered, torch.ops.aten.scatter_add_: _scattered,
    torch.ops.aten.scatter_reduce_: _scattered,
    torch.ops.aten.index_put_: lambda args: _indexed_entries(args[0], args[1]),
}


def _count_filled(stats, tensor, written=None):
    """A storage filled piece by piece (out= slices of a buffer made before the call) counts as the bytes
    written into it, up to its size: a [Tq, Tk] matrix written by row blocks is still that matrix.
    written: the bytes this operation wrote, when it wrote only some entries of tensor."""
    pointer = _storage_ptr(tensor)
    if pointer is None:
        return
    total = stats.written.get(pointer, 0) + (tensor.numel() * tensor.element_size() if written is None else written)
    stats.written[pointer] = total
    stats.largest_bytes = max(stats.largest_bytes, min(total, tensor.untyped_storage().nbytes()))


def _tensors(value: Any) -> list[torch.Tensor]:
    """The tensors in an operation's arguments or result (nested lists, tuples and dicts): the counter's hot
    path, so a plain loop rather than a general tree walk."""
    found, pending = [], [value]
    while pending:
        item = pending.pop()
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
    return found


_WRITES: dict[Any, tuple[tuple[int, str], ...]] = {}  # operator -> (position, name) of the arguments it writes


def _written(func, args, kwargs):
    """The tensors an operation writes into (in place, or its out= arguments), from its schema."""
    positions = _WRITES.get(func)
    if positions is None:
        arguments = enumerate(func._schema.arguments)
        positions = _WRITES[func] = tuple((index, argument.name) for index, argument in arguments
                                          if argument.alias_info is not None and argument.alias_info.is_write)
    for index, name in positions:
        value = args[index] if index < len(args) else (kwargs or {}).get(name)
        yield from _tensors(value)


def _storage_ptr(tensor):
    """Identity of a tensor's memory: views and in-place results share their input's (not new memory)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None


@contextlib.contextmanager
def watch() -> Iterator[CallStats]:
    """Context manager yielding the CallStats of everything run inside it."""
    stats = CallStats()
    first_hit, first_refusal = len(_HITS), len(_REFUSALS)
    counter = _counter()
    try:
        _refuse_foreign_modes(first_refusal)
        with _FunctionGuard(stats):
            counter.stats, _STATE["graded"] = stats, True
            try:
                yield stats
            finally:
                counter.stats, _STATE["graded"] = None, False
                if not counter_in_place():
                    _REFUSALS.append(HIDDEN_MESSAGE)
        _refuse_foreign_modes(first_refusal)
    finally:
        stats.forbidden += _HITS[first_hit:]
        stats.refused += _REFUSALS[first_refusal:]
        if _STATE.get("installed") and FORBIDDEN["probe"] and not _overrides_hold():
            stats.refused.append(f"the grader's replacement of {FORBIDDEN['what']} kernels was undone")


# The torch function modes a graded process may hold between calls: the guard's own, and the one
# torch.set_default_device() pushes. Any other mode would see the grader's own operations on the call's
# inputs and results, outside the metered call.
KNOWN_FUNCTION_MODES = (_FunctionGuard, DeviceContext)
_READ_FUNCTION_STACK = (torch._C._len_torch_function_stack, torch._C._get_function_stack_at)


def foreign_function_modes() -> list[str]:
    """The class names of the torch function modes on the stack that are none of KNOWN_FUNCTION_MODES."""
    length, at = _READ_FUNCTION_STACK
    return [type(mode).__name__ for mode in (at(index) for index in range(length()))
            if type(mode) not in KNOWN_FUNCTION_MODES]


def _refuse_foreign_modes(since: int) -> None:
    """Record (once per call: since is where this call's refusals start) a mode of the student's on the stack."""
    foreign = foreign_function_modes()
    message = (f"a torch function mode of your own ({', '.join(foreign)}) stays on torch's stack outside the "
               "graded call: a mode must be entered and left inside the call that uses it")
    if foreign and message not in _REFUSALS[since:]:
        _REFUSALS.append(message)


HIDDEN_MESSAGE = ("operations were hidden from the grader's operation counter (torch's dispatch mode stack or "
                  "dispatch keys were changed)")
_C = torch._C
_READ_STACK = (_C._len_torch_dispatch_stack, _C._get_dispatch_stack_at, _C._dispatch_tls_is_dispatch_key_excluded,
               _C._dispatch_tls_is_dispatch_key_included, _C.DispatchKey.Python)


def _counter():
    """The one dispatch counter of this process, pushed on first use and never popped."""
    if _STATE["counter"] is None:
        counter = _DispatchCounter()
        counter.__enter__()
        _STATE["counter"] = counter
    return _STATE["counter"]


def counter_in_place() -> bool:
    """Whether operations run now reach the counter: it is at the bottom of the dispatch mode stack and the
    Python dispatch key is neither excluded nor dropped."""
    length, at, excluded, included, python = _READ_STACK
    return (length() > 0 and at(0) is _STATE["counter"]
            and not excluded(python) and included(python))


# -- process-wide rules (grader.sandbox.worker installs them before importing the student's file) ----------

_HITS: list[str] = []
_REFUSALS: list[str] = []
_STATE = {"graded": False, "installed": False, "probing": False, "probe_answered": False, "bookkeeping": False,
          "counter": None}
# Taken before install() replaces them for the student's code: the grader's own probes and copies run below
# any mode or tensor subclass of the student's.
NO_TORCH_FUNCTION = torch._C.DisableTorchFunction
NO_TORCH_DISPATCH = torch._C._DisableTorchDispatch
_LIBRARY: list[torch.library.Library] = []  # kept alive: dropping it would undo its kernels
NUMPY_MESSAGE = ("{what} is refused while your code is graded: this lab asks for torch tensor operations "
                 "(no round trip through numpy)")
KERNELS: dict[str, str] = dict(FORBIDDEN["kernels"])  # aten op -> the dispatch key its own kernel is registered at
REFUSED_EVENTS = {
    "os.fork": "starting a process", "os.forkpty": "starting a process", "os.system": "starting a process",
    "os.exec": "starting a program", "os.posix_spawn": "starting a process", "os.spawn": "starting a process",
    "subprocess.Popen": "starting a process", "ctypes.dlopen": "loading a C library (ctypes)",
    "ctypes.dlsym": "loading a C function (ctypes)", "ctypes.dlsym/handle": "loading a C function (ctypes)",
    "ctypes.call_function": "calling a C function (ctypes)", "ctypes.cdata": "reading memory by address (ctypes)",
    "ctypes.cdata/buffer": "reading memory by address (ctypes)", "sys.setprofile": "replacing the profiler hook",
    "gc.get_objects": "searching the garbage collector's objects", "gc.get_referrers": "searching the garbage "
    "collector's objects", "gc.get_referents": "searching the garbage collector's objects",
}
DISPATCH_KEYS = "changing torch's dispatch keys"
DISPATCHER = "switching torch's dispatcher"
COUNTER_ESCAPES = {  # torch._C name -> what it does; each would let operations run past the counter
    "_pop_torch_dispatch_stack": "removing a mode from torch's dispatch mode stack",
    "_push_on_torch_dispatch_stack": "pushing a mode on torch's dispatch mode stack",
    "_set_dispatch_mode": "setting a torch dispatch mode", "_unset_dispatch_mode": "removing a torch dispatch mode",
    "_DisableTorchDispatch": "disabling torch's dispatch modes",
    "_disabled_torch_dispatch_impl": "running an operation below torch's dispatch modes",
    "_ExcludeDispatchKeyGuard": DISPATCH_KEYS, "ExcludeDispatchKeyGuard": DISPATCH_KEYS,
    "_SetExcludeDispatchKeyGuard": DISPATCH_KEYS, "_ForceDispatchKeyGuard": DISPATCH_KEYS,
    "_dispatch_tls_set_dispatch_key_excluded": DISPATCH_KEYS,
    "_dispatch_tls_set_dispatch_key_included": DISPATCH_KEYS,
    "_EnablePythonDispatcher": DISPATCHER, "_DisablePythonDispatcher": DISPATCHER, "_EnablePreDispatch": DISPATCHER,
    "_dispatch_library": "defining torch operators or kernels (torch.library)",
}


class Refused(RuntimeError):
    """Raised in the student's code for something the grader does not allow there."""


REFUSAL = FORBIDDEN["what"] + " ({name}) is not allowed: " + FORBIDDEN["instead"]


def _installed(factory):
    """factory's functions go where student code can reach them: each is detached (_detached)."""
    def make(*args, **kwargs):
        return _detached(factory(*args, **kwargs))
    return make


def _refuse(reason):
    _REFUSALS.append(reason)
    raise Refused(f"{reason} is not allowed in this lab's graded code")


@_installed
def _forbidden_kernel(name):
    def refuse(*args, **kwargs):
        if _STATE["probing"]:
            _STATE["probe_answered"] = True  # our kernel ran, not an imitation raising Refused
        else:
            _HITS.append(name)
        raise Refused(REFUSAL.format(name=name))
    return refuse


@_installed
def _forbidden_python(name):
    def refuse(*args, **kwargs):
        _HITS.append(name)
        raise Refused(REFUSAL.format(name=name))
    return refuse


def _overrides_hold():
    """Whether our kernels still answer the forbidden operators: a probe below any torch function mode
    (a student's could answer it with a Refused of its own), which counts only if our kernel ran."""
    _STATE["probing"], _STATE["probe_answered"] = True, False
    try:
        with NO_TORCH_FUNCTION():
            getattr(torch.ops.aten, FORBIDDEN["probe"])(torch.zeros(1), 0)
    except Refused:
        return bool(_STATE["probe_answered"])
    except Exception:
        return False
    finally:
        _STATE["probing"] = False
    return False


REIMPORT_GUARDED = ("_thread", "_posixsubprocess", "_ctypes", "ctypes")


def _audit(event, args):
    if event in REFUSED_EVENTS:
        _refuse(REFUSED_EVENTS[event])
    if event == "import" and args and args[0] in REIMPORT_GUARDED:  # a fresh copy would undo install()
        _refuse(f"re-importing {args[0]}")


def _no_threads(*args, **kwargs):
    _refuse("starting a thread")


def _no_processes(*args, **kwargs):
    _refuse("starting a process")


@_installed
def _only_outside_graded_calls(original, what):
    def checked(*args, **kwargs):
        if _STATE["graded"]:
            _REFUSALS.append(NUMPY_MESSAGE.format(what=what))
            raise Refused(NUMPY_MESSAGE.format(what=what))
        return original(*args, **kwargs)
    return checked


@_installed
def _refusal(what):
    def refuse(*args, **kwargs):
        _refuse(what)
    return refuse


@_installed
def _recorded_while_graded(original, what):
    def recorded(*args, **kwargs):
        if _STATE["graded"]:
            _REFUSALS.append(what)
        return original(*args, **kwargs)
    return recorded


# The dunders the lab's code may name (lab/allowed-use.json): any other set on a module is a hook into Python's
# machinery set by a name made at run time (copy.copy calls an instance's own __reduce_ex__), which the syntax
# scan refuses in the source; this refuses it however it is reached.
DUNDERS = frozenset(LAB.policy["dunders"])


@_installed
def _module_setattr(original):
    def checked(self, name, value):
        if name.startswith("__") and name.endswith("__") and name not in DUNDERS:
            _refuse(f"setting the attribute {name} of a module")
        return original(self, name, value)
    return checked


# dataclasses pastes each field's name into the source of the methods it execs (__init__, __repr__, __eq__): a
# Field renamed to anything but a plain name would run as code. The syntax scan keeps Field objects out of reach;
# this refuses the rename however one is reached.
_IS_KEYWORD = keyword.iskeyword


@_installed
def _field_setattr(original):
    def checked(self, name, value):
        if name == "name" and value is not None and not (  # None: a Field not yet given its class's name
                isinstance(value, str) and value.isidentifier() and not _IS_KEYWORD(value)
                and not (value.startswith("__") and value not in DUNDERS)):
            _refuse("naming a dataclass field other than by a plain name")
        return original(self, name, value)
    return checked


FOREIGN_STORAGE = "a tensor on memory torch did not allocate ({what}) is refused in this lab's code"


@_installed
def _no_foreign_storage(what):
    def refuse(*args, **kwargs):
        _refuse(FOREIGN_STORAGE.format(what=what).removesuffix(" is refused in this lab's code"))
    return refuse


@_installed
def _counted_per_element(original, from_result, tensor_type=torch.Tensor):
    """original, which moves every element between a tensor and Python: during a graded call, each element
    counts as one operation (a loop over Python floats then grows the count with the shape, as any loop)."""
    def counted(*args, **kwargs):
        if args and isinstance(args[0], (bytes, bytearray, memoryview)) or hasattr(args[0] if args else None,
                                                                                   "__array_interface__"):
            _refuse(FOREIGN_STORAGE.format(what="a Python buffer").removesuffix(" is refused in this lab's code"))
        result = original(*args, **kwargs)
        counter = _STATE["counter"]
        if _STATE["graded"] and counter is not None and counter.stats is not None and not counter.paused:
            tensor = result if from_result else args[0]
            if isinstance(tensor, tensor_type):
                counter.stats.op_count += tensor.numel()
        return result
    return counted


FORBIDDEN_METHOD = re.compile(FORBIDDEN["module_methods"])  # what computes, not what builds or loads


def forbidden_modules() -> list[type]:
    """torch's modules the lab forbids, by what they are, not by one name: every nn.Module class a loaded torch
    module defines whose name holds one of the lab's module parts (its torch.ao variants too,
    the Transformer layers, and whatever a newer torch adds there)."""
    found = set()
    with warnings.catch_warnings():  # some torch names warn when looked at (torch.distributed.reduce_op)
        warnings.simplefilter("ignore")
        for name, module in list(sys.modules.items()):
            if module is None or not (name == "torch" or name.startswith("torch.")):
                continue
            for value in list(vars(module).values()):
                if (isinstance(value, type) and issubclass(value, torch.nn.Module)
                        and value.__module__.startswith("torch.")
                        and any(part in value.__name__.lower() for part in FORBIDDEN["module_parts"])):
                    found.add(value)
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def _refuse_forbidden_modules():
    """Each class's forward refuses, and so does calling any instance of one or of a subclass (a global
    forward pre-hook: a subclass's own forward, or a forward reached another way, is caught at the call)."""
    classes = tuple(forbidden_modules())
    for cls in classes:
        for name, value in list(vars(cls).items()):
            if callable(value) and not name.startswith("__") and FORBIDDEN_METHOD.search(name):
                setattr(cls, name, _forbidden_python(f"{cls.__qualname__}.{name}"))

    family = classes[0].__name__

    def pre_hook(module, args):
        if isinstance(module, classes):
            name = f"{type(module).__qualname__} (torch's {family} family)"
            _HITS.append(name)
            raise Refused(REFUSAL.format(name=name))

    torch.nn.modules.module.register_module_forward_pre_hook(_detached(pre_hook))


def _replace_everywhere(replacements):
    """Rebind every name torch's modules have for each original of (original, replacement) pairs
    (`from torch._C import ...` made copies), in one walk of the modules."""
    by_identity = {id(original): replacement for original, replacement in replacements}
    for name, module in list(sys.modules.items()):
        if name == "torch" or name.startswith("torch."):
            for attribute, value in list(vars(module).items()):
                if id(value) in by_identity:
                    setattr(module, attribute, by_identity[id(value)])


# Printing a tensor is not counted only where torch's own code does all of it: a tensor of torch's own types
# whose classes are as install() found them (a subclass's property, or one set on torch.Tensor, would run the
# student's code while the counter is paused).
_PRINTED_AS_TORCH = (torch.Tensor, torch.nn.Parameter)
_CLASSES_AT_INSTALL: dict[type, dict[str, Any]] = {}


def _print_uncounted(self, *, tensor_contents=None):
    """torch's tensor printer without its pop of every dispatch mode: printing is simply not counted."""
    if type(self) not in _PRINTED_AS_TORCH or any(dict(vars(cls)) != attributes
                                                  for cls, attributes in _CLASSES_AT_INSTALL.items()):
        with torch.no_grad():
            return torch._tensor_str._str_intern(self, tensor_contents=tensor_contents)
    counter = _counter()
    counter.paused += 1
    try:
        with torch.no_grad():
            no_functorch = torch._C._DisableFuncTorch()  # noqa: F841  (as torch's own printer does)
            return torch._tensor_str._str_intern(self, tensor_contents=tensor_contents)
    finally:
        counter.paused -= 1


def _keep_the_counter_in_place():
    _counter()
    _CLASSES_AT_INSTALL.update({cls: dict(vars(cls)) for cls in _PRINTED_AS_TORCH})
    torch._tensor_str._str = _print_uncounted
    torch._C._DispatchOperatorHandle.redispatch_boxed = _refusal("redispatching an operation below torch's modes")
    disable = torch._C.DisableTorchFunction
    _replace_everywhere([*((getattr(torch._C, name), _refusal(what)) for name, what in COUNTER_ESCAPES.items()),
                         (disable, _recorded_while_graded(
                             disable, "disabling torch's function handling (torch._C.DisableTorchFunction)"))])


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _code_names(constant)
    return names


def _detached(function, done=None):
    """function with a namespace of its own in place of this module's: only the names its code reads (the
    functions among them detached too) and only the builtins it calls. What the guard installs where student
    code can reach it hands out through __globals__ neither this module, nor a module, nor __import__."""
    done = {} if done is None else done
    if id(function) in done:
        return done[id(function)]
    names = _code_names(function.__code__)
    namespace = {"__builtins__": {name: getattr(builtins, name) for name in names
                                  if name not in globals() and hasattr(builtins, name)}}
    cells = tuple(types.CellType(_detached(cell.cell_contents, done) if _ours(cell.cell_contents)
                                 else cell.cell_contents) for cell in function.__closure__ or ())
    detached = types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__,
                                  cells or None)
    detached.__qualname__, detached.__doc__ = function.__qualname__, function.__doc__
    done[id(function)] = detached
    for name in names & globals().keys():
        value = globals()[name]
        if isinstance(value, types.ModuleType):
            raise TypeError(f"{function.__qualname__} reads the module {name}: bind what it needs instead")
        namespace[name] = _detached(value, done) if _ours(value) else value
    return detached


def _ours(value: object) -> bool:
    """A function of this module's (its namespace is this module's)."""
    return isinstance(value, types.FunctionType) and value.__globals__ is globals()


def install() -> None:
    """Put the process-wide rules in place (once; they cannot be removed by the code they watch)."""
    if _STATE["installed"]:
        return
    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, key in KERNELS.items():
            library.impl(name, _forbidden_kernel(name), key)
    _LIBRARY.append(library)
    for dotted in FORBIDDEN["python_functions"]:  # pure Python: no kernel of theirs to replace
        owner, _, name = dotted.rpartition(".")
        setattr(importlib.import_module(owner), name, _forbidden_python(name))
    _refuse_forbidden_modules()
    for owner, name, what in ((torch, "frombuffer", "torch.frombuffer"), (torch, "from_file", "torch.from_file"),
                              (torch.UntypedStorage, "from_buffer", "UntypedStorage.from_buffer"),
                              (torch.UntypedStorage, "from_file", "UntypedStorage.from_file")):
        setattr(owner, name, _no_foreign_storage(what))
    torch.Tensor.tolist = _counted_per_element(torch.Tensor.tolist, from_result=False)  # type: ignore[method-assign]
    for name in ("tensor", "as_tensor", "asarray"):
        setattr(torch, name, _counted_per_element(getattr(torch, name), from_result=True))
    for name, what in (("numpy", "Tensor.numpy()"), ("__array__", "converting a tensor to numpy"),
                       ("__dlpack__", "sharing a tensor through DLPack")):
        setattr(torch.Tensor, name, _only_outside_graded_calls(getattr(torch.Tensor, name), what))
    for name in ("from_numpy", "from_dlpack"):
        setattr(torch, name, _only_outside_graded_calls(getattr(torch, name), f"torch.{name}"))
    torch.nn.Module.__setattr__ = _module_setattr(torch.nn.Module.__setattr__)  # type: ignore[method-assign]
    dataclasses.Field.__setattr__ = _field_setattr(object.__setattr__)  # type: ignore[method-assign]
    _thread.start_new_thread = threading._start_new_thread = _detached(_no_threads)  # type: ignore[attr-defined]  # private, not in typeshed
    _posixsubprocess.fork_exec = _detached(_no_processes)
    _keep_the_counter_in_place()
    sys.addaudithook(_audit)
    _STATE["installed"] = True
