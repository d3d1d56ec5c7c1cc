"""Messages between the test process and the worker that runs student code.

Each message is one length-prefixed frame in this module's own format: a tag byte per value of plain data
(None, bools, numbers, str, bytes, lists, tuples, dicts, torch.Size, dtypes, devices, slices) and, for a
tensor, its dtype, device, sizes, strides, offset and the raw bytes of its storage. Reading a frame builds
only those values, so a worker that sends crafted bytes cannot make the test process run code (no pickle),
and it allocates no more than the frame holds (no compression, no sizes taken on trust: a tensor's view must
fit the bytes that came with it). torch.save was the format before: its zip archive and checksums made it
several times slower, and every grade sends thousands of messages.
"""

import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

MAGIC = b"AW1"
MAX_FRAME = 256 * 1024 * 1024
# The part of a message that is not tensor data (dicts, names, messages) and any one string in it. Honest
# messages are a few kilobytes; these bounds keep a crafted one (an exception class with a name of millions of
# characters, say) from growing the test process and every report built from it.
MAX_STRUCTURE = 1024 * 1024
MAX_TEXT = 10_000
MAX_DIMS = 64
# the dtypes a message may hold, by name (quantized and bit-packed ones never cross)
DTYPES = {str(dtype): dtype for dtype in (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16, torch.uint32,
    torch.uint64, torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex32, torch.complex64,
    torch.complex128)}

# torch's own functions, as they were when this module was imported: the worker's guard (installed after it)
# refuses tensors on foreign memory and numpy in the student's code, and a frame is neither
_FROMBUFFER = torch.frombuffer
_NUMPY = torch.Tensor.numpy

_I64 = struct.Struct("<q")
_U32 = struct.Struct("<I")
_F64 = struct.Struct("<d")


class ProtocolError(RuntimeError):
    """The other side sent something that is not a valid frame."""


# -- writing --------------------------------------------------------------------------------------------------

def encode(message: Any) -> bytes:
    """message as a frame; TypeError for a value of a type no frame holds."""
    out: list[bytes | memoryview] = [MAGIC]
    _write(message, out)
    return b"".join(out)


def _text(out: list[bytes | memoryview], tag: bytes, data: bytes | memoryview) -> None:
    out += (tag, _U32.pack(len(data)), data)


def _write(value: Any, out: list[bytes | memoryview]) -> None:  # noqa: C901 (one branch per type, in one place)
    kind = type(value)
    if value is None:
        out.append(b"N")
    elif kind is bool:
        out.append(b"T" if value else b"F")
    elif kind is int:
        if -(2 ** 63) <= value < 2 ** 63:
            out += (b"I", _I64.pack(value))
        else:
            _text(out, b"J", str(value).encode())
    elif kind is float:
        out += (b"D", _F64.pack(value))
    elif kind is complex:
        out += (b"C", _F64.pack(value.real), _F64.pack(value.imag))
    elif kind is str:
        _text(out, b"S", value.encode("utf-8", "surrogatepass"))
    elif kind is bytes:
        _text(out, b"B", value)
    elif issubclass(kind, torch.Size):
        out += (b"Z", _U32.pack(len(value)), *(_I64.pack(int(n)) for n in tuple.__iter__(value)))
    elif issubclass(kind, (list, tuple)):
        items = list(list.__iter__(value) if issubclass(kind, list) else tuple.__iter__(value))
        out += (b"L" if issubclass(kind, list) else b"U", _U32.pack(len(items)))
        for item in items:
            _write(item, out)
    elif issubclass(kind, dict):
        items = list(dict.items(value))
        if not all(type(key) is str for key, _ in items):
            raise TypeError("a dict with keys other than str cannot be sent between the grader and the worker")
        out += (b"M", _U32.pack(len(items)))
        for key, item in items:
            _write(key, out)
            _write(item, out)
    elif kind is torch.dtype:
        _text(out, b"Y", str(value).encode())
    elif kind is torch.device:
        _text(out, b"V", str(value).encode())
    elif kind is slice:
        out.append(b"E")
        for part in (value.start, value.stop, value.step):
            _write(part, out)
    elif value is Ellipsis:
        out.append(b".")
    elif issubclass(kind, torch.Tensor):
        _write_tensor(value, out)
    elif issubclass(kind, (int, float, str)):  # numpy's float64, an IntEnum: as the base type's value
        _write(next(base for base in (int, float, str) if issubclass(kind, base))(value), out)
    else:
        raise TypeError(f"a {kind.__name__} cannot be sent between the grader and the worker")


def _write_tensor(tensor: torch.Tensor, out: list[bytes | memoryview]) -> None:
    """Read through torch.Tensor's own methods: a subclass's overrides take no part."""
    if tensor.layout != torch.strided or str(tensor.dtype) not in DTYPES:
        raise TypeError(f"a {tensor.layout} tensor of {tensor.dtype} cannot be sent between the grader and the worker")
    tensor = torch.Tensor.resolve_neg(torch.Tensor.resolve_conj(tensor))
    device = tensor.device
    if device.type not in ("cpu", "meta"):  # an accelerator's tensor travels as its values, contiguous
        tensor = torch.Tensor.contiguous(torch.Tensor.cpu(tensor))
    elif tensor.numel() * tensor.element_size() > torch.Tensor.untyped_storage(tensor).nbytes():
        tensor = torch.Tensor.contiguous(tensor)  # a view that repeats its entries (expand): decode takes none
    data: bytes | memoryview = b""
    if device.type != "meta":  # the storage's bytes as they are: join() below makes the one copy
        storage = torch.empty(0, dtype=torch.uint8).set_(torch.Tensor.untyped_storage(tensor))
        data = _NUMPY(storage).data
    _text(out, b"X", str(tensor.dtype).encode())
    _text(out, b"", str(device).encode())
    out.append(_U32.pack(tensor.dim()))
    out += (_I64.pack(n) for n in (*tensor.shape, *tensor.stride(), tensor.storage_offset()))
    out.append(b"\1" if tensor.requires_grad else b"\0")
    _text(out, b"", data)


# -- reading --------------------------------------------------------------------------------------------------

def decode(frame: bytes) -> Any:
    """The message a frame holds, its strings cut to MAX_TEXT; ProtocolError for anything else."""
    if len(frame) > MAX_FRAME or bytes(frame[:len(MAGIC)]) != MAGIC:
        raise ProtocolError("unreadable message from the worker: not a frame of this grader")
    reader = _Reader(memoryview(frame), len(MAGIC))
    try:
        message = reader.value()
    except ProtocolError:
        raise
    except Exception as error:  # a crafted frame: out of bounds, a size that no tensor can have, too deep...
        raise ProtocolError(f"unreadable message from the worker: {type(error).__name__}: {cut(str(error), 200)}") \
            from None
    if reader.at != len(frame):
        raise ProtocolError("unreadable message from the worker: bytes after its end")
    return message


class _Reader:
    def __init__(self, frame: memoryview, at: int) -> None:
        self.frame = frame
        self.at = at
        self.structure = 0  # bytes read that are no tensor's data

    def take(self, count: int, data: bool = False) -> memoryview:
        if count < 0 or self.at + count > len(self.frame):
            raise ProtocolError("unreadable message from the worker: it ends inside a value")
        if not data:
            self.structure += count
            if self.structure > MAX_STRUCTURE:
                raise ProtocolError(f"a message from the worker holds more than {MAX_STRUCTURE} bytes besides its "
                                    f"tensors")
        chunk = self.frame[self.at:self.at + count]
        self.at += count
        return chunk

    def unpack(self, form: struct.Struct) -> Any:
        return form.unpack(self.take(form.size))[0]

    def text(self) -> bytes:
        return bytes(self.take(self.unpack(_U32)))

    def value(self) -> Any:  # noqa: C901 (one branch per tag, in one place)
        tag = bytes(self.take(1))
        if tag == b"N":
            return None
        if tag in (b"T", b"F"):
            return tag == b"T"
        if tag == b"I":
            return self.unpack(_I64)
        if tag == b"J":
            return int(self.text())
        if tag == b"D":
            return self.unpack(_F64)
        if tag == b"C":
            return complex(self.unpack(_F64), self.unpack(_F64))
        if tag == b"S":
            return cut(self.text().decode("utf-8", "surrogatepass"))
        if tag == b"B":
            return self.text()
        if tag == b"Z":
            return torch.Size(self.unpack(_I64) for _ in range(self.unpack(_U32)))
        if tag in (b"L", b"U"):
            items = [self.value() for _ in range(self.unpack(_U32))]
            return items if tag == b"L" else tuple(items)
        if tag == b"M":  # str keys only: str hashes are salted, so no frame can make its keys collide
            return {self.key(): self.value() for _ in range(self.unpack(_U32))}
        if tag == b"Y":
            return self.dtype()
        if tag == b"V":
            return torch.device(self.text().decode())
        if tag == b"E":
            return slice(self.value(), self.value(), self.value())
        if tag == b".":
            return Ellipsis
        if tag == b"X":
            return self.tensor()
        raise ProtocolError(f"unreadable message from the worker: unknown tag {tag!r}")

    def key(self) -> str:
        key = self.value()
        if type(key) is not str:
            raise ProtocolError("unreadable message from the worker: a dict key that is not a str")
        return key

    def dtype(self) -> torch.dtype:
        name = self.text().decode()
        if name not in DTYPES:
            raise ProtocolError(f"unreadable message from the worker: no tensor of {name[:40]!r} crosses")
        return DTYPES[name]

    def tensor(self) -> torch.Tensor:
        """A tensor on exactly the bytes that came with it, with no more elements than those bytes hold (an
        honest sender clones first: no view overlaps itself), and bools that are 0 or 1. A view reaching past
        the bytes is refused by set_() (the storage of torch.frombuffer cannot grow)."""
        dtype = self.dtype()
        device = torch.device(self.text().decode())
        dims = self.unpack(_U32)
        if dims > MAX_DIMS:
            raise ProtocolError(f"unreadable message from the worker: a tensor of {dims} dimensions")
        sizes = [self.unpack(_I64) for _ in range(dims)]
        strides = [self.unpack(_I64) for _ in range(dims)]
        offset = self.unpack(_I64)
        requires_grad = bytes(self.take(1)) == b"\1"
        data = self.take(self.unpack(_U32), data=True)
        if min((*sizes, *strides, offset), default=0) < 0:
            raise ProtocolError("unreadable message from the worker: a tensor with a negative size or stride")
        elements = math.prod(sizes)
        if device.type == "meta":  # no data, so no bound: a meta tensor allocates nothing
            if data:
                raise ProtocolError("unreadable message from the worker: a meta tensor with data")
            reach = sum((size - 1) * stride for size, stride in zip(sizes, strides, strict=True))
            extent = offset + (reach + 1 if elements else 0)
            storage = torch.empty(extent, dtype=dtype, device="meta").untyped_storage()
        elif elements and not data:
            raise ProtocolError("unreadable message from the worker: a tensor without its data")
        elif elements * dtype.itemsize > len(data):
            raise ProtocolError("unreadable message from the worker: a tensor with more elements than its bytes hold")
        elif dtype is torch.bool and bytes(data).translate(None, b"\0\1"):
            raise ProtocolError("unreadable message from the worker: a bool tensor holding bytes other than 0 and 1")
        else:  # the one copy; untyped bytes, so that a storage of any length holds a view of any dtype
            storage = _FROMBUFFER(bytearray(data) or bytearray(1), dtype=torch.uint8).untyped_storage()
        tensor = torch.empty(0, dtype=dtype, device=storage.device).set_(storage, offset, sizes, strides)
        if device.type not in ("cpu", "meta"):
            tensor = tensor.to(device)
        return tensor.requires_grad_() if requires_grad else tensor


def cut(text: str, limit: int = MAX_TEXT) -> str:
    """text, cut to limit characters with a note of how many were cut."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} characters cut)"


def walk(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """value with its lists, tuples and str-keyed dicts rebuilt and every other item replaced by leaf(item).

    The one traversal both sides use, to send (leaf packs: tensors copied, what stays behind becomes a
    remote reference) and to receive (leaf turns remote references back into objects). A remote reference
    and a torch.Size are leaves themselves; a tuple subclass arrives as a plain tuple.

    It runs no code of the value's own: types are read with type(), never isinstance() (which asks for
    __class__), and a subclass of tuple, list or dict is read through the base type's own methods, so that a
    student's __iter__ or items() cannot compute anything while the result is being sent.
    """
    kind = type(value)
    if is_remote_ref(value) or issubclass(kind, torch.Size):
        return leaf(value)
    if issubclass(kind, tuple):
        return tuple(walk(item, leaf) for item in tuple.__iter__(value))
    if issubclass(kind, list):
        return [walk(item, leaf) for item in list.__iter__(value)]
    if issubclass(kind, dict):
        items = list(dict.items(value))
        if all(issubclass(type(key), str) for key, _ in items):
            return {str.__str__(key): walk(item, leaf) for key, item in items}
    return leaf(value)


def remote_ref(handle_id: int, type_name: str | None = None) -> dict[str, Any]:
    """How an object that stays on its side travels: its handle there, and its type's name for messages."""
    return {"__remote__": handle_id} if type_name is None else {"__remote__": handle_id, "type": type_name}


def is_remote_ref(value: object) -> bool:
    return type(value) is dict and set(dict.keys(value)) <= {"__remote__", "type"} and "__remote__" in value


READY = {"ready": True}  # the worker's first frame: the sandbox stands, and the student's file is not imported yet


# -- what a reply must look like -------------------------------------------------------------------------------
# The worker runs the student's code, so the test process checks each reply's shape before it reads a field. A
# shape is a type (exactly that type: torch.load gives plain ones back, and a bool is no line number), a tuple of
# shapes (any one of them), a dict {field: shape} (at least those fields), ListOf or DictOf.


@dataclass(frozen=True)
class ListOf:
    item: Any


@dataclass(frozen=True)
class DictOf:
    key: Any
    value: Any


def conforms(value: Any, shape: Any) -> bool:
    if isinstance(shape, type):
        return type(value) is shape
    if isinstance(shape, tuple):
        return any(conforms(value, each) for each in shape)
    if isinstance(shape, ListOf):
        return type(value) is list and all(conforms(item, shape.item) for item in value)
    if isinstance(shape, DictOf):
        return type(value) is dict and all(conforms(key, shape.key) and conforms(item, shape.value)
                                           for key, item in value.items())
    return type(value) is dict and all(name in value and conforms(value[name], field) for name, field in shape.items())


STRINGS = ListOf(str)
# an exception as the worker describes it (grader.sandbox.worker.Worker.describe)
ERROR = {"type": str, "bases": STRINGS, "submission_classes": STRINGS, "message": str, "line": (int, type(None)),
         "code": str, "traceback": str}
# op -> the fields the test process reads from its reply when it succeeded; a failed one is FAILED, whatever the op
SUCCEEDED = {
    "hello": {"exceptions": DictOf(str, STRINGS), "import_error": (type(None), ERROR)},
    "call": {"stats": dict},
    "grad": {"stats": dict},
}
FAILED = {"error": ERROR}


def well_formed_reply(op: str, reply: Any) -> bool:
    """Whether reply, the worker's answer to a request of op, has the shape that op's replies have."""
    if type(reply) is not dict or type(reply.get("ok")) is not bool:
        return False
    return conforms(reply, SUCCEEDED.get(op, {}) if reply["ok"] else FAILED)
