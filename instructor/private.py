"""Everything the instructor tools write about students is theirs and the staff's alone: files 0600 and
folders 0700, whatever the umask (a student's worker never sees them either: its view holds none)."""

import os
from pathlib import Path
from typing import Any, TextIO


def open_private(path: str | Path, **options: Any) -> TextIO:
    """open(path, "w") (text), the file made or truncated with mode 0600."""
    handle: TextIO = open(path, "w", opener=lambda name, flags: os.open(name, flags, 0o600), **options)
    os.fchmod(handle.fileno(), 0o600)  # an existing file keeps its old mode through os.open
    return handle


def write_private(path: str | Path, text: str) -> None:
    with open_private(path, encoding="utf-8", newline="") as handle:
        handle.write(text)


def private_folder(path: str | Path) -> Path:
    """path, made if missing (with its parents), mode 0700."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder
