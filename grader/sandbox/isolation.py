"""The OS sandbox the worker (student code) runs in: which level this machine gives, and the command
that starts the worker there (its init is grader.sandbox.boot; its file system grader.sandbox.view).

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

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from grader.paths import GRADER, REPO, Env
from grader.sandbox.policy import DEFAULT, Limits
from grader.sandbox.slots import FIRST_UID, SLOTS, Slot
from grader.sandbox.view import HOME, SCRATCH, mount_point, plan

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
        return "uid" if all(_traversable(path) for path in _needed()) else "none"
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


def _traversable(path):
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


# -- starting the worker ---------------------------------------------------------------------------

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grader.sandbox.boot import boot; boot(sys.argv[2])"


def private_dir(name: str) -> Path:
    """The folder name in the temporary directory, made if missing: refused unless it is ours alone."""
    folder = Path(tempfile.gettempdir()) / name
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077 or not stat.S_ISDIR(info.st_mode):
        raise RuntimeError(f"{folder} is not a private directory of this user")
    return folder


class SandboxedProcess(subprocess.Popen):
    """The worker's outermost process; waiting for it also frees its uid and cgroups."""

    slot: Slot | None = None
    scratch: str | None = None

    def _cleanup(self):
        if self.slot is not None:
            self.slot.release()
            self.slot = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def wait(self, timeout: float | None = None) -> int:
        code = super().wait(timeout)
        self._cleanup()
        return code

    def poll(self) -> int | None:
        code = super().poll()
        if code is not None:
            self._cleanup()
        return code


def secrets(impl_file: str | os.PathLike[str], hide: Iterable[str | os.PathLike[str]] = ()) -> list[str]:
    """What no view may show: the checkout, the student's folder, and the folders in hide (the class)."""
    return [str(REPO), str(Path(impl_file).parent), *map(str, hide)]


def command(impl_file: str | os.PathLike[str], fd: int, chosen: str, limits: Limits = DEFAULT,
            hide: Iterable[str | os.PathLike[str]] = (), warm: str = "all") -> tuple[list[str], Slot | None, str]:
    """(argv, slot, host folder to remove afterwards) to start the worker on impl_file with socket fd."""
    slot = Slot(limits) if chosen in TRUSTED else None
    config: dict = {"impl": str(impl_file), "fd": fd, "level": chosen, "uid": slot.uid if slot else None,
                    "limits": limits.to_json(), "cgroups": [str(path) for path in slot.cgroups] if slot else [],
                    "warm": warm, "view": None, "root": None, "scratch": None}
    try:
        if chosen in VIEW_LEVELS:
            view = plan(GRADER, secrets(impl_file, hide))
            folder = mount_point(view)
            config.update(view=view.to_json(), root=folder)
        else:  # the uid level: no view; a scratch folder other uids can enter, outside TMPDIR
            folder = tempfile.mkdtemp(prefix="grader-scratch-", dir=scratch_base())
            os.chmod(folder, 0o755)
            config.update(scratch=folder)
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    return sandboxed_python(chosen, BOOT, config), slot, folder


def sandboxed_python(chosen: str, boot: str, config: dict) -> list[str]:
    """The command line of an isolated, unbuffered Python (-I -u: print() reaches the log at once) that runs
    boot with the grader importable and config as its argument, in new namespaces at the levels that have them."""
    python = [sys.executable, "-I", "-u", "-c", boot, str(GRADER.parent), json.dumps(config)]
    if chosen == "namespaces":
        return [unshare_path(), *NAMESPACE_FLAGS, *python]
    if chosen == "user-namespace":
        return [unshare_path(), "--user", "--map-root-user", *NAMESPACE_FLAGS, *python]
    return python


def worker_home(chosen: str, folder: str) -> str:
    """Where the worker's home is, seen from the worker (boot.prepare_scratch makes it)."""
    return f"{SCRATCH if chosen in VIEW_LEVELS else folder}/{HOME}"


def scratch_base() -> str:
    """Where the uid level's scratch folders go: a folder every uid can traverse, whatever TMPDIR says."""
    for base in ("/dev/shm", "/tmp", "/var/tmp", tempfile.gettempdir()):
        if os.path.isdir(base) and _traversable(Path(base).resolve()) and os.access(base, os.W_OK):
            return base
    raise SandboxUnavailable("no folder that the sandbox's uid can enter for its scratch (tried /dev/shm, /tmp)")


def unshare_path() -> str:
    """Where `unshare` is (the namespace levels are only chosen where it was found)."""
    path = shutil.which("unshare")
    if path is None:
        raise SandboxUnavailable("`unshare` (util-linux) is no longer on PATH: the namespace sandbox cannot start")
    return path

