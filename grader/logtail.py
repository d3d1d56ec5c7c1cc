"""The end of a log, read without reading the rest: for whoever reads a log a child wrote (the grader reads its
pytest child's, grader.run; the pytest child reads its worker's, grader.sandbox.proxy). A student's code can
fill its log with one 200 MB line; reading only the tail keeps that from costing the reader anything."""

import os
from typing import IO

LOG_TAIL_BYTES = 16 * 1024


def read_tail(path_or_file: str | os.PathLike[str] | IO[bytes], limit: int = LOG_TAIL_BYTES) -> str:
    """The last `limit` bytes of a log (a path, or a file open for reading bytes) as text."""
    def tail(handle: IO[bytes]) -> str:
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - limit))
        return handle.read(limit).decode(errors="replace")
    if not isinstance(path_or_file, (str, os.PathLike)):
        return tail(path_or_file)
    with open(path_or_file, "rb") as handle:
        return tail(handle)
