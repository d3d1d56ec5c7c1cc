"""Least privilege where the sandbox has no allow-list view: the `uid` level (root without namespaces, as in
Gradescope's container) shows the worker the machine's file system as its own uid sees it.

What the worker's uid needs there, and nothing else of the source folder (found by running it, not listed by
hand): to enter the source folder (not to list it: `grader` is imported by its init, as root, before the worker
takes its uid, and the worker imports nothing else from that folder), to read `grader/` and `lab/`, and the Python
install it runs (the venv and its base interpreter: `needed()`, the paths `isolation` checks before it offers the
level). `lock()` makes the source folder so (setup.sh runs `python -m grader.sandbox.exposure` in the bundle);
`refuse_readable()` is what gradescope-run and batch check before the first student at that level.

    python -m grader.sandbox.exposure [SOURCE]   (as root: lock SOURCE, by default the folder holding grader/)
"""

import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from grader.paths import REPO
from grader.sandbox.slots import FIRST_UID, SLOTS
from grader.sandbox.view import worker_reads

# The uid the check reads as: a worker's (every worker uid owns no file, so any one of them reads what all do);
# the last slot's, which a running worker holds only when every other slot is taken.
PROBE_UID = FIRST_UID + SLOTS - 1
OTHERS = stat.S_IRWXG | stat.S_IRWXO
READABLE = stat.S_IROTH | stat.S_IRGRP


def needed(source: Path = REPO) -> list[Path]:
    """What the worker's uid must read: source's copies of what a worker reads (grader.sandbox.view.worker_reads:
    grader/ and the lab's description) and the Python install running now (venv and base)."""
    return [*((Path(source) / folder.name).resolve() for folder in worker_reads()),
            Path(os.path.realpath(sys.prefix)), Path(os.path.realpath(sys.base_prefix))]


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _open_up(top: Path) -> None:
    """Let other uids read top's tree (`chmod -R o+rX`, group too): a umask of 077 at setup would close it."""
    for folder, _, files in os.walk(top):
        for name in [".", *files]:
            path = Path(folder, name)
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                continue  # chmod would follow it
            wanted = info.st_mode | READABLE
            if stat.S_ISDIR(info.st_mode) or info.st_mode & stat.S_IXUSR:
                wanted |= stat.S_IXOTH | stat.S_IXGRP
            if wanted != info.st_mode:
                os.chmod(path, stat.S_IMODE(wanted))


def lock(source: Path = REPO, keep: Iterable[Path] | None = None) -> list[Path]:
    """Close source to other uids except the paths in keep (default needed(source)) and the way to them: a
    folder on that way can be entered, not listed; everything beside it loses every permission of group and
    others. Returns the paths it closed. Links are left as they are (chmod would follow them)."""
    source = Path(source).resolve()
    keep = [Path(path) for path in (needed(source) if keep is None else keep)]
    closed: list[Path] = []

    def walk(folder: Path) -> None:
        for entry in sorted(folder.iterdir()):
            info = entry.lstat()
            if stat.S_ISLNK(info.st_mode):
                continue
            if any(_within(entry, path) for path in keep):
                _open_up(entry)
            elif any(_within(path, entry) for path in keep):  # on the way to something kept
                os.chmod(entry, stat.S_IMODE(info.st_mode) & ~OTHERS | stat.S_IXOTH | stat.S_IXGRP)
                walk(entry)
            else:
                os.chmod(entry, stat.S_IMODE(info.st_mode) & ~OTHERS)
                closed.append(entry)

    os.chmod(source, stat.S_IMODE(source.stat().st_mode) & ~OTHERS | stat.S_IXOTH | stat.S_IXGRP)
    walk(source)
    return closed


def _paths_under(tops: Iterable[Path]) -> list[Path]:
    found = []
    for top in tops:
        if top.exists():
            found.append(top)
            found += sorted(top.rglob("*"))
    return found


def _first_open(paths: list[Path]) -> str:
    """The first of paths this process can list (a folder) or read (a file), or ""."""
    for path in paths:
        try:
            if path.is_dir():
                os.listdir(path)
            else:
                with open(path, "rb") as handle:
                    handle.read(1)
        except OSError:
            continue
        return str(path)
    return ""


def readable_by_workers(tops: Iterable[Path], uid: int = PROBE_UID) -> str:
    """The first path in tops' trees a worker's uid can list or read, or "": asked of the kernel by a child that
    takes that uid (permission bits, ACLs and mounts all count), given every path found as root, so that a folder
    it may enter but not list still has its files tried. Needs root."""
    paths = _paths_under(Path(top) for top in tops)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # only system calls here, then _exit: safe after fork in a process with threads
        try:
            os.close(read_end)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.write(write_end, ("open:" + _first_open(paths)).encode(errors="replace")[:4096])
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answer:
        said = answer.read().decode(errors="replace")
    os.waitpid(child, 0)
    if not said.startswith("open:"):
        raise OSError(f"could not check what uid {uid} can read (the probe did not answer)")
    return said.removeprefix("open:")


def refuse_readable(command: str, tests: Path, others: Iterable[Path] = ()) -> None:
    """At the uid level: raise SandboxUnavailable, in one line naming the path and the fix, when a worker's uid
    can read the tests (or a path in others, such as the reference solution)."""
    from grader.sandbox.isolation import SandboxUnavailable

    tops = [Path(tests), *map(Path, others)]
    found = readable_by_workers(tops)
    if found:
        raise SandboxUnavailable(
            f"{command}: at the uid level (no namespaces on this machine) students' code runs as another uid, and "
            f"that uid can read {found}: every submission could read the tests. Close them to other users "
            f"(`chmod -R go-rwx {' '.join(map(str, tops))}`, or `python -m grader.sandbox.exposure` as setup.sh "
            "does), or grade where namespaces work.")


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else REPO
    for path in lock(source):
        print(f"closed to other users: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
