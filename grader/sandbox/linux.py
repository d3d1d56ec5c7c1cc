"""The Linux calls the sandbox is built from (mount, pivot_root, prctl, unshare, capabilities, limits).

No libc handle is kept between calls: the worker's code shares this interpreter, and a cached handle
would be a ready-made way into C for it.
"""

import ctypes
import os
import platform
import sys
from typing import Any

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
KEPT_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC | 1024 | 2048 | 4096  # noatime, nodiratime, relatime
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 4, 38, 24
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217, "i686": 217}


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def mount(source: str | None, target: str, fstype: str | None = None, flags: int = 0,
          data: str | None = None) -> None:
    _check(_libc().mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                         ctypes.c_ulong(flags), data and data.encode()), f"mount {target}")


def umount(target: str, flags: int = 0) -> None:
    _check(_libc().umount2(target.encode(), ctypes.c_int(flags)), f"umount {target}")


def remount_read_only(target: str) -> None:
    """Remount a bind read-only, keeping the flags the kernel locks (nosuid, nodev, noexec, atime)."""
    flags = os.statvfs(target).f_flag & KEPT_FLAGS
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def tmpfs(target: str, size_mb: int, mode: int, uid: int = 0) -> None:
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_mb}m,mode={mode:o},uid={uid},gid={uid}")


def pivot_root(new_root: str, put_old: str) -> None:
    number = PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(f"pivot_root: no system call number known for {platform.machine()}")
    _check(_libc().syscall(ctypes.c_long(number), new_root.encode(), put_old.encode()), "pivot_root")


def unshare(flags: int) -> None:
    _check(_libc().unshare(ctypes.c_int(flags)), "unshare")


def prctl(option: int, value: int) -> None:
    _check(_libc().prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl {option}")


def make_undumpable() -> None:
    """No /proc/PID/mem, no ptrace, no core file of this process for anyone but root with CAP_SYS_PTRACE.
    Nothing where there is no prctl (macOS, Windows): the grader runs there too, unsandboxed."""
    if not sys.platform.startswith("linux"):
        return
    try:
        prctl(PR_SET_DUMPABLE, 0)
    except OSError:
        pass


def drop_capabilities() -> None:
    for capability in range(64):
        try:
            prctl(PR_CAPBSET_DROP, capability)
        except OSError:
            break
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc().capset(header, data), "capset")
