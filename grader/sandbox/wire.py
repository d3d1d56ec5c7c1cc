"""Messages between the test process and the worker that runs student code.

Each message is one length-prefixed frame holding a `torch.save` of plain data (dicts, lists,
tuples, str, numbers, None and tensors). Frames are read back with `torch.load(weights_only=True)`,
which cannot run code, so a worker that sends crafted bytes cannot reach into the test process.
"""

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

MAX_FRAME = 256 * 1024 * 1024
# The part of a message that is not tensor data (its pickle: dicts, names, messages) and any one string in it.
# Honest messages are a few kilobytes; these bounds keep a crafted one (an exception class with a name of
# millions of characters, say) from growing the test process and every report built from it.
MAX_PICKLE = 1024 * 1024
MAX_TEXT = 10_000


class ProtocolError(RuntimeError):
    """The other side sent something that is not a valid frame."""


def encode(message: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(message, buffer)
    return buffer.getvalue()


def check_archive(frame: bytes, limit: int = MAX_FRAME) -> None:
    """Refuse a frame whose archive would unpack to more than limit bytes, or holds compressed entries
    (torch.save writes none): a small frame must never make the reader allocate gigabytes."""
    try:
        entries = zipfile.ZipFile(io.BytesIO(frame)).infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as error:
        raise ProtocolError(f"unreadable message from the worker: {error}") from None
    if any(entry.compress_type != zipfile.ZIP_STORED for entry in entries):
        raise ProtocolError("a message from the worker holds compressed entries (torch.save writes none)")
    if sum(entry.file_size for entry in entries) > limit:
        raise ProtocolError(f"a message from the worker would unpack to more than {limit} bytes")
    if sum(entry.file_size for entry in entries if entry.filename.endswith(".pkl")) > MAX_PICKLE:
        raise ProtocolError(f"a message from the worker holds more than {MAX_PICKLE} bytes besides its tensors")


def decode(frame: bytes) -> Any:
    check_archive(frame)
    try:
        message = torch.load(io.BytesIO(frame), weights_only=True)
    except Exception as error:
        raise ProtocolError(f"unreadable message from the worker: {error}") from None
    return bounded(message)


def bounded(value: Any) -> Any:
    """value with every string of its lists, tuples and dicts cut to MAX_TEXT characters (what torch.load gives
    back: plain types, so type() tells them)."""
    kind = type(value)
    if kind is str:
        return value if len(value) <= MAX_TEXT else f"{value[:MAX_TEXT]}... ({len(value) - MAX_TEXT} characters cut)"
    if kind is list:
        return [bounded(item) for item in value]
    if kind is tuple:
        return tuple(bounded(item) for item in value)
    if kind is dict:
        return {bounded(key): bounded(item) for key, item in value.items()}
    return value


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
