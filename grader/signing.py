"""Signed JSON lines between the pytest child and the grader (HMAC-SHA256 with a one-time key)."""

import hashlib
import hmac
import json
import os
from typing import Any


class Reporter:
    """Writes signed records to the pipe the grader gave; the key arrives on a second pipe."""

    def __init__(self, report_fd: int, key_fd: int) -> None:
        with os.fdopen(key_fd, "rb") as key_pipe:
            self.key = key_pipe.read()
        self.stream = os.fdopen(report_fd, "w", buffering=1)

    def send(self, record: Any) -> None:
        body = json.dumps(record, sort_keys=True)
        mac = hmac.new(self.key, body.encode(), hashlib.sha256).hexdigest()
        self.stream.write(json.dumps({"body": body, "mac": mac}) + "\n")


def verify(line: str, key: bytes) -> tuple[Any, bool]:
    """(record, True) for a line signed with key; (None, False) for anything else."""
    try:
        envelope = json.loads(line)
        body, mac = envelope["body"], envelope["mac"]
    except (ValueError, KeyError, TypeError):
        return None, False
    expected = hmac.new(key, str(body).encode(), hashlib.sha256).hexdigest()
    if not isinstance(mac, str) or not hmac.compare_digest(mac, expected):
        return None, False
    return json.loads(body), True
