"""Slots: one uid and one set of cgroups per running worker, unique on the whole machine.

A slot is an flock on a file in one machine-wide folder. The folder must not depend on TMPDIR, nor on /tmp
itself (a service with a private /tmp, `unshare -m`): two graders that saw different folders would take the
same uid and cgroup, and each would kill the other's worker when it starts or ends. /run/lock is the system's
folder for machine-wide locks.
"""

import os
import signal
import stat
import time
from pathlib import Path
from typing import IO

from grader.sandbox import cgroups
from grader.sandbox.policy import MB, Limits

FIRST_UID = 60000
SLOTS = 1000
LOCK_BASES = ("/run/lock", "/dev/shm", "/tmp")


def lock_dir(bases: tuple[str, ...] = LOCK_BASES) -> Path:
    """The machine-wide folder of slot locks (root's, 0700), in the first of bases that exists."""
    base = next((Path(b) for b in bases if Path(b).is_dir() and os.access(b, os.W_OK)), None)
    if base is None:
        raise OSError(f"none of {', '.join(bases)} is a writable folder for the sandbox's slot locks")
    folder = base / f"grader-sandbox-{os.geteuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077 or not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{folder} is not a private directory of this user")
    return folder


class Slot:
    """A uid no other worker on this machine uses while this one runs, and its cgroups."""

    def __init__(self, limits: Limits) -> None:
        import fcntl  # POSIX only; slots exist only where the sandbox does

        self.lock: IO[str] | None = None
        self.cgroups: list[Path] = []
        folder = lock_dir()
        for slot in range(SLOTS):
            handle = open(folder / f"{slot}.lock", "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            break
        else:
            raise RuntimeError("no free sandbox uid")
        self.lock, self.uid = handle, FIRST_UID + slot
        kill_uid(self.uid)
        self.cgroups = cgroups.make(f"grader-sandbox-{self.uid}", limits.tree_memory_mb * MB, limits.processes)

    def release(self) -> None:
        if self.lock is None:
            return
        cgroups.remove(self.cgroups)
        kill_uid(self.uid)
        self.lock.close()
        self.lock = None


def kill_uid(uid: int) -> None:
    """SIGKILL every process whose real or effective uid is uid (a daemon left by a worker)."""
    for _ in range(20):
        found = False
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                uids = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("Uid:"))
            except (OSError, StopIteration):
                continue
            if str(uid) in uids.split()[1:3]:
                found = True
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except OSError:
                    pass
        if not found:
            return
        time.sleep(0.02)
