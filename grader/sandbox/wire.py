"""Messages between the test process and the worker that runs student code.

Each message is one length-prefixed frame holding a `torch.save` of plain data (dicts, lists,
tuples, str, numbers, None and tensors). Frames are read back with `torch.load(weights_only=True)`,
which cannot run code, so a worker that sends crafted bytes cannot reach into the test process.
"""

import io
from typing import Any

import torch

MAX_FRAME = 256 * 1024 * 1024


class ProtocolError(RuntimeError):
    """The other side sent something that is not a valid frame."""


def encode(message: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(message, buffer)
    return buffer.getvalue()


def decode(frame: bytes) -> Any:
    try:
        return torch.load(io.BytesIO(frame), weights_only=True)
    except Exception as error:
        raise ProtocolError(f"unreadable message from the worker: {error}") from None


def remote_ref(handle_id: int) -> dict[str, int]:
    return {"__remote__": handle_id}


def is_remote_ref(value: object) -> bool:
    return isinstance(value, dict) and set(value) <= {"__remote__", "type"} and "__remote__" in value
