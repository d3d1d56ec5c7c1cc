"""Which isolation this machine gives student code, chosen once per process: for the process that grades.

The grader (`python -m grader`, batch, gradescope-run, a Dask host's preflight) calls level(), describe() or
require() and hands the level it checked to its pytest child (grader.handover), which starts the worker at that
level without probing again; only a plain `pytest` run, with no grader above it, asks level() itself. How the
worker is started at a level is grader.sandbox.spawn's; its init, grader.sandbox.boot; its file system,
grader.sandbox.view.

Levels, best first (`level()` picks the best this machine offers, once per process):
- "namespaces": we are root and `unshare` works. The worker runs as its own uid (60000 + slot, one per
  concurrent worker on the machine), in new PID, network, IPC, UTS and mount namespaces, in an allow-list
  view: a new root holding only the Python install, grader/, /proc and a private tmpfs scratch (HOME,
  TMPDIR, cwd) with a copy of the student's file. A root `init` process is PID 1 of the namespace: when the
  worker ends, init exits and the kernel kills whatever is left.
- "uid": root, but no namespaces (a container without CAP_SYS_ADMIN): the worker still runs as its own
  uid, so it cannot read, signal or write anything of root's; leftovers are killed by uid. It sees the
  machine's file system as that uid would.
- "user-namespace": not root, user namespaces work: the namespaces and view above inside a user
  namespace, all capabilities dropped; same real uid as the grader.
- "none": a plain child process (macOS, Windows, or no namespaces). Fine for a student grading themselves.
The resource limits (grader.sandbox.policy.Limits) apply at every level on Linux; the cgroups
(grader.sandbox.cgroups, v1 or v2) where they can be made.
"""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from grader.paths import GRADER, Env
from grader.sandbox.slots import FIRST_UID, SLOTS

LEVELS = ("namespaces", "uid", "user-namespace", "none")
DESCRIPTIONS = {
    "namespaces": "sandbox: own uid, PID/network/IPC/mount namespaces, only the Python install visible, read-only",
    "uid": "sandbox: own uid only (no namespaces on this machine)",
    "user-namespace": "sandbox: user namespace (PID/network/IPC/mount namespaces, only the Python install visible, "
                      "same uid)",
    "none": "no sandbox: student code runs as you, with your permissions",
}
TRUSTED = ("namespaces", "uid")
VIEW_LEVELS = ("namespaces", "user-namespace")  # the levels with a mount namespace, so an allow-list view
EXPOSED = {  # what a worker can read at a level without the allow-list view
    "uid": "the machine's world-readable files: a class folder or a checkout other users can read",
    "user-namespace": "every file you can read",
    "none": "every file you can read",
}
_LEVEL: dict[str, str] = {}


# -- choosing the level --------------------------------------------------------------------------

def _probe(command):
    try:
        return subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


NAMESPACE_FLAGS = ["--pid", "--fork", "--kill-child", "--mount", "--net", "--ipc", "--uts", "--mount-proc"]


def _detect():
    forced = os.environ.get(Env.SANDBOX)
    if forced == "off" or not sys.platform.startswith("linux"):
        return "none"
    if forced in LEVELS:  # a weaker level on purpose (tests of the fallbacks)
        return forced
    unshare = shutil.which("unshare")
    if os.geteuid() == 0 and workers_uids_mapped():
        if unshare and _probe([unshare, *NAMESPACE_FLAGS, "true"]):
            return "namespaces"
        return "uid" if all(traversable(path) for path in _needed()) else "none"
    if unshare and _probe([unshare, "--user", "--map-root-user", *NAMESPACE_FLAGS, "true"]):
        return "user-namespace"
    return "none"


def workers_uids_mapped(uid_map: str = "/proc/self/uid_map") -> bool:
    """Whether this process's user namespace has the workers' uids (FIRST_UID + slot): root inside a user
    namespace that maps only itself has none, and must sandbox as an unprivileged user does."""
    try:
        lines = Path(uid_map).read_text().split("\n")
    except OSError:
        return True  # no user namespaces here: every uid exists
    ranges = [tuple(map(int, line.split())) for line in lines if len(line.split()) == 3]
    return any(inside <= FIRST_UID and FIRST_UID + SLOTS <= inside + count for inside, _, count in ranges)


def _needed():
    return [GRADER.resolve(), Path(os.path.realpath(sys.prefix)), Path(os.path.realpath(sys.base_prefix))]


def traversable(path: Path) -> bool:
    """Whether another uid can reach path (without a mount namespace nothing can be exposed to it)."""
    return all(os.stat(folder).st_mode & stat.S_IXOTH for folder in (path, *path.parents))


def level() -> str:
    """The isolation this process gives student code (GRADER_SANDBOX=off, or a level's name, forces it)."""
    if "level" not in _LEVEL:
        _LEVEL["level"] = _detect()
    return _LEVEL["level"]


def describe() -> str:
    return f"isolation: {DESCRIPTIONS[level()]}"


class SandboxUnavailable(RuntimeError):
    """batch and gradescope-run grade other people's code: they refuse to run it unsandboxed."""


def require(command: str, allow_none: bool = False, levels: tuple[str, ...] = TRUSTED) -> None:
    """Raise unless student code will run sandboxed at one of levels (or the instructor said --no-sandbox)."""
    if allow_none or level() in levels:
        return
    exposed = f" There, students' code can read {EXPOSED[level()]}." if level() in EXPOSED else ""
    raise SandboxUnavailable(
        f"{command} grades other people's code, and this machine gives it only this isolation: "
        f"{DESCRIPTIONS[level()]}; it needs {' or '.join(DESCRIPTIONS[each] for each in levels)}.{exposed} "
        f"{_how_to_reach(levels)}, or pass --no-sandbox to accept that."
    )


def _how_to_reach(levels: tuple[str, ...]) -> str:
    """Where the levels asked for are found, as the start of a sentence."""
    if "user-namespace" in levels:  # an ordinary user gets it where the kernel allows user namespaces
        return ("Run it on Linux as root, or as a user who may make user namespaces "
                "(`unshare --user --map-root-user --net true` succeeds)")
    return "Run it as root on Linux with namespaces"
