"""The OS sandbox the worker (student code) runs in.

Levels, best first (`level()` picks the best this machine offers, once per process):
- "namespaces": we are root and `unshare` works. The worker runs as its own uid (60000 + slot, one per
  concurrent worker), in new PID, network, IPC, UTS and mount namespaces, with every mount read-only,
  the student's folder, tests/ and solutions/ covered, and one private tmpfs as its scratch (HOME, TMPDIR,
  cwd), where a copy of attention.py is the only student file it can import. A root `init` process is
  PID 1 of the namespace: when the worker ends, init exits and the kernel kills whatever is left.
- "uid": root, but no namespaces (a container without CAP_SYS_ADMIN): the worker still runs as its own
  uid, so it cannot read, signal or write anything of root's; leftovers are killed by uid.
- "user-namespace": not root, user namespaces work: the namespaces above inside a user namespace, all
  capabilities dropped; same real uid as the grader.
- "none": a plain child process (macOS, Windows, or no namespaces). Fine for a student grading themselves.
The resource limits (LIMITS) apply at every level on Linux; the cgroups (grader.sandbox.cgroups, v1 or v2) where
they can be made.
"""

import ctypes
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from grader.paths import GRADER, IMPL_NAME, INSTRUCTOR, REPO, SOLUTIONS, TESTS, Env
from grader.sandbox import cgroups

if TYPE_CHECKING:
    import pytest

LEVELS = ("namespaces", "uid", "user-namespace", "none")
DESCRIPTIONS = {
    "namespaces": "sandbox: own uid, PID/network/IPC/mount namespaces, read-only file system",
    "uid": "sandbox: own uid only (no namespaces on this machine)",
    "user-namespace": "sandbox: user namespace (PID/network/IPC/mount namespaces, read-only file system, same uid)",
    "none": "no sandbox: student code runs as you, with your permissions",
}
TRUSTED = ("namespaces", "uid")
FIRST_UID = 60000
SLOTS = 1000
MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Every limit on the worker, in one place (address space is added to the worker's start-up size)."""

    address_space_mb: int = int(os.environ.get(Env.WORKER_MEMORY_MB, "3072"))
    tree_memory_mb: int = int(os.environ.get(Env.SANDBOX_MEMORY_MB, "1024"))
    processes: int = 64
    file_size_mb: int = 16
    open_files: int = 256
    cpu_seconds: int = 900
    scratch_mb: int = 64


LIMITS = Limits()
_LEVEL: dict[str, str] = {}


LOG_TAIL_BYTES = 16 * 1024


def read_tail(path_or_file: str | os.PathLike[str] | IO[bytes], limit: int = LOG_TAIL_BYTES) -> str:
    """The last `limit` bytes of a log as text: a 200 MB line costs the reader nothing."""
    def tail(handle):
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - limit))
        return handle.read(limit).decode(errors="replace")
    if hasattr(path_or_file, "seek"):
        return tail(path_or_file)
    with open(path_or_file, "rb") as handle:
        return tail(handle)


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
    if os.geteuid() == 0:
        if unshare and _probe([unshare, *NAMESPACE_FLAGS, "true"]):
            return "namespaces"
        return "uid" if all(_traversable(path) for path in _needed()) else "none"
    if unshare and _probe([unshare, "--user", "--map-root-user", *NAMESPACE_FLAGS, "true"]):
        return "user-namespace"
    return "none"


def _needed():
    return [REPO.resolve(), Path(os.path.realpath(sys.prefix)), Path(os.path.realpath(sys.base_prefix)),
            Path(tempfile.gettempdir()).resolve()]


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
    raise SandboxUnavailable(
        f"{command} grades other people's code, and this machine gives it only this isolation: "
        f"{DESCRIPTIONS[level()]}; it needs {' or '.join(DESCRIPTIONS[each] for each in levels)}. "
        "Run it as root on Linux (namespaces), or pass --no-sandbox to accept that."
    )


# -- slots: one uid and one cgroup per running worker -----------------------------------------------

def private_dir(name: str) -> Path:
    """The folder name in the temporary directory, made if missing: refused unless it is ours alone."""
    folder = Path(tempfile.gettempdir()) / name
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077 or not stat.S_ISDIR(info.st_mode):
        raise RuntimeError(f"{folder} is not a private directory of this user")
    return folder


class Slot:
    """A uid no other worker uses while this one runs (an flock held by this process), and its cgroups."""

    def __init__(self) -> None:
        self.lock: IO[str] | None = None
        self.cgroups: list[Path] = []
        import fcntl  # POSIX only; slots exist only where the sandbox does

        lock_dir = private_dir(f"grader-sandbox-{os.geteuid()}")
        for slot in range(SLOTS):
            handle = open(lock_dir / f"{slot}.lock", "w")
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
        self.cgroups = cgroups.make(f"grader-sandbox-{self.uid}", LIMITS.tree_memory_mb * MB, LIMITS.processes)

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


# -- starting the worker ---------------------------------------------------------------------------

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grader.sandbox.isolation import boot; boot(sys.argv[2])"


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


def hidden_paths(impl_file: str | os.PathLike[str], scratch: str) -> list[str]:
    """What the worker must not read: the student's folder (it gets a copy of attention.py), the tests,
    the reference, and whatever GRADER_SANDBOX_HIDE lists (batch: the class's folder)."""
    extra = [p for p in os.environ.get(Env.SANDBOX_HIDE, "").split(os.pathsep) if p]
    candidates = [Path(impl_file).parent, TESTS, SOLUTIONS, INSTRUCTOR, *map(Path, extra)]
    needed = [path.resolve() for path in (GRADER, Path(sys.prefix), Path(sys.base_prefix), Path(scratch))]
    candidates = [path.resolve() for path in candidates if path.is_dir()]
    return [str(path) for path in candidates if not any(n == path or path in n.parents for n in needed)]


def _to_expose(scratch):
    return sorted({str(REPO.resolve()), os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix), scratch})


def command(impl_file: str | os.PathLike[str], fd: int, chosen: str) -> tuple[list[str], Slot | None, str]:
    """(argv, slot, scratch) to start the worker on impl_file with socket fd at the chosen level."""
    python = [sys.executable, "-I", "-u", "-c", BOOT, str(REPO)]  # -u: print() reaches the log at once
    limits = {"address_space_mb": LIMITS.address_space_mb, "processes": LIMITS.processes,
              "file_size_mb": LIMITS.file_size_mb, "open_files": LIMITS.open_files,
              "cpu_seconds": LIMITS.cpu_seconds, "scratch_mb": LIMITS.scratch_mb}
    slot = Slot() if chosen in ("namespaces", "uid") else None
    scratch = tempfile.mkdtemp(prefix="grader-scratch-")
    config = {"impl": str(impl_file), "fd": fd, "level": chosen, "uid": slot.uid if slot else None, "limits": limits,
              "scratch": scratch, "mounts": chosen in ("namespaces", "user-namespace"),
              "cgroups": [str(path) for path in slot.cgroups] if slot else [],
              "hide": hidden_paths(impl_file, scratch),
              "expose": _to_expose(scratch) if slot else []}  # a user namespace keeps our uid: it reaches all we do
    argv = python + [json.dumps(config)]
    if chosen == "namespaces":
        argv = [unshare_path(), *NAMESPACE_FLAGS] + argv
    elif chosen == "user-namespace":
        argv = [unshare_path(), "--user", "--map-root-user", *NAMESPACE_FLAGS] + argv
    if slot is not None:
        os.chmod(scratch, 0o755)
    return argv, slot, scratch


def unshare_path() -> str:
    """Where `unshare` is (the namespace levels are only chosen where it was found)."""
    path = shutil.which("unshare")
    if path is None:
        raise SandboxUnavailable("`unshare` (util-linux) is no longer on PATH: the namespace sandbox cannot start")
    return path


# -- inside: the sandbox's init (runs as root in the new namespaces) ------------------------------

_LIBC: dict[str, ctypes.CDLL] = {}
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
KEPT_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC | 1024 | 2048 | 4096  # noatime, nodiratime, relatime
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 4, 38, 24


def _libc():
    if "libc" not in _LIBC:
        _LIBC["libc"] = ctypes.CDLL(None, use_errno=True)
    return _LIBC["libc"]


def _check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def mount(source: str | None, target: str, fstype: str | None = None, flags: int = 0,
          data: str | None = None) -> None:
    _check(_libc().mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                         ctypes.c_ulong(flags), data and data.encode()), f"mount {target}")


def prctl(option: int, value: int) -> None:
    _check(_libc().prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl {option}")


def make_undumpable() -> None:
    """No /proc/PID/mem, no ptrace, no core file of this process for anyone but root with CAP_SYS_PTRACE."""
    if sys.platform.startswith("linux"):
        try:
            prctl(PR_SET_DUMPABLE, 0)
        except OSError:
            pass


def pytest_configure(config: "pytest.Config") -> None:
    """Loaded into the graded pytest process (`-p grader.sandbox.isolation`): it holds the HMAC key."""
    make_undumpable()


def _mount_points():
    points = []
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            target = line.split()[4]
            points.append(target.encode().decode("unicode_escape"))
    return points


def _remount_read_only(target):
    flags = os.statvfs(target).f_flag & KEPT_FLAGS
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def _read_only_everything():
    for target in _mount_points():
        try:
            _remount_read_only(target)
        except OSError as error:
            if not target.startswith(("/proc/", "/sys/")):
                raise
            print(f"sandbox: {error}", file=sys.stderr)


def _tmpfs(target, size_mb, mode, uid=0, read_only=False):
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | (MS_RDONLY if read_only else 0),
          f"size={size_mb}m,mode={mode:o},uid={uid},gid={uid}")


def _expose(path, stage_root):
    """Make path traversable for the worker's uid: an ancestor only root may enter (a 0700 /root
    holding the Python install) is covered by an empty tmpfs with path bound back into it."""
    parts = Path(path).parts
    for depth in range(1, len(parts)):
        ancestor = Path(*parts[:depth])
        if os.stat(ancestor).st_mode & stat.S_IXOTH:
            continue
        child = ancestor / parts[depth]
        stage = Path(tempfile.mkdtemp(dir=stage_root))
        mount(str(child), str(stage), None, MS_BIND | MS_REC)
        _tmpfs(str(ancestor), 1, 0o755)
        os.mkdir(child)
        mount(str(stage), str(child), None, MS_MOVE)
        _remount_read_only(str(ancestor))
        _remount_read_only(str(child))
        os.rmdir(stage)


def _set_limits(limits, own_uid):
    import resource

    def cap(which, value):
        resource.setrlimit(which, (value, value))

    if own_uid:  # RLIMIT_NPROC counts every process of the real uid: only meaningful for our own uid
        cap(resource.RLIMIT_NPROC, limits["processes"])
    cap(resource.RLIMIT_FSIZE, limits["file_size_mb"] * MB)
    cap(resource.RLIMIT_NOFILE, limits["open_files"])
    cap(resource.RLIMIT_CPU, limits["cpu_seconds"])
    cap(resource.RLIMIT_CORE, 0)


def _drop_capabilities():
    for capability in range(64):
        try:
            prctl(PR_CAPBSET_DROP, capability)
        except OSError:
            break
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc().capset(header, data), "capset")


def _become_worker(config, impl_copy, home):
    os.chdir(home)
    uid = config["uid"]
    _set_limits(config["limits"], uid is not None)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    elif config["mounts"]:
        _drop_capabilities()
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.closerange(3, config["fd"])
    os.closerange(config["fd"] + 1, 65536)
    os.environ.update(HOME=home, TMPDIR=home, PYTHONDONTWRITEBYTECODE="1", **{Env.SANDBOX_LEVEL: config["level"]})
    sys.dont_write_bytecode = True
    from grader.sandbox import worker

    worker.main([str(config["fd"]), impl_copy])
    os._exit(0)


def boot(config_text: str) -> None:
    """The sandbox's init: join the cgroups, build the file system view, start the worker, reap."""
    config = json.loads(config_text)
    cgroups.join(config["cgroups"])
    source = Path(config["impl"]).read_bytes()
    scratch = config["scratch"]
    if config["mounts"]:
        _read_only_everything()
        _tmpfs(scratch, config["limits"]["scratch_mb"], 0o755)
        stage_root = Path(scratch, ".stage")
        stage_root.mkdir()
        for path in config["expose"]:
            _expose(path, stage_root)
        os.rmdir(stage_root)
        for path in config["hide"]:
            _tmpfs(path, 1, 0o755, read_only=True)
    make_undumpable()
    impl_copy = Path(scratch, IMPL_NAME)
    impl_copy.write_bytes(source)
    impl_copy.chmod(0o444)
    home = Path(scratch, "home")
    home.mkdir(mode=0o700)
    if config["uid"] is not None:
        os.chown(home, config["uid"], config["uid"])
    sys.stdout.flush()
    child = os.fork()
    if child == 0:
        try:
            _become_worker(config, str(impl_copy), str(home))
        except BaseException as error:
            print(f"sandbox: the worker could not start: {error!r}", file=sys.stderr, flush=True)
            os._exit(70)
    os.close(config["fd"])
    while True:
        pid, status = os.wait()
        if pid == child:
            break
    if config["uid"] is not None and not config["mounts"]:
        _kill_as(config["uid"])
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def _kill_as(uid):
    """Without a PID namespace: kill every process of the worker's uid (daemons it left)."""
    helper = os.fork()
    if helper == 0:
        os.setresuid(uid, uid, uid)
        try:
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(helper, 0)
