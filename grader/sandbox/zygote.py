"""A sandboxed zygote: one process that has imported torch once, from which each student's worker is forked.

`batch` (and each Dask worker host) grades many students; without a zygote every worker is a new Python
that imports torch (about 2 CPU-seconds). The zygote is started like a worker's sandbox (`unshare`: PID,
network, IPC, UTS and mount namespaces, every mount read-only except the cgroup controllers, tests/,
solutions/ and the class's folder covered), imports torch and the worker's modules, and then only forks.
It holds nothing secret: no key, no submission (each source arrives as a file descriptor that only the
forked child reads), and it runs nothing a request sends.

Each fork (the "child") joins its student's cgroups, makes new mount, PID, network, IPC and UTS
namespaces and forks the student's init (PID 1 there, root), which mounts a fresh /proc, a private tmpfs
scratch with a copy of attention.py, and forks the worker: grader.sandbox's own uid, limits, no new
privileges, then grader.sandbox.worker's loop. So one student's worker sees neither the zygote nor another
student: not their processes, files, network or IPC. Killing the child (or the zygote) ends the init by its
parent-death signal, and the kernel then ends every process of that namespace. The zygote kills the children
of a channel that closes (its client ended), and exits when its last channel closes.

    with Zygote(hide=[class_folder]) as zygote:      # the client: the process that runs the grades
        worker, sock = zygote.spawn(impl_file, log)  # what grader.sandbox.spawn.spawn_worker returns
"""

import contextlib
import ctypes
import dataclasses
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from grader import forkserver
from grader.forkserver import Channel, ServerGone
from grader.paths import GRADER, INSTRUCTOR, NOT_FOR_WORKER, REPO, SOLUTIONS, TESTS, scrubbed
from grader.sandbox import cgroups
from grader.sandbox import isolation as sandbox

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
STUDENT_NAMESPACES = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET
CGROUP_TYPES = ("cgroup", "cgroup2")
BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grader.sandbox.zygote import serve; serve(sys.argv[2])"


# -- the client side ---------------------------------------------------------------------------------

class ZygoteWorker(forkserver.Forked):
    """A worker forked by the zygote, reached through the pidfd of the zygote's child that is its ancestor
    (`pid` is that child's pid here)."""

    def __init__(self, pidfd: int, slot: sandbox.Slot) -> None:
        super().__init__(pidfd)
        self.slot: sandbox.Slot | None = slot

    def kill(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def wait(self, timeout: float = 5.0) -> int:
        """Wait for it to end, then free its uid and cgroups (which also kills whatever is left of it)."""
        if self.pidfd is not None:
            select.select([self.pidfd], [], [], timeout)
            os.close(self.pidfd)
            self.pidfd = None
        if self.slot is not None:
            self.slot.release()
            self.slot = None
        return -signal.SIGKILL


class Zygote(forkserver.Client):
    """Starts the zygote; spawn() asks it for one student's worker. Safe to use from several threads."""

    KIND = "zygote"

    def __init__(self, hide: Iterable[str | Path] = (), channel: Channel | None = None) -> None:
        """hide: start a zygote that covers these folders too. channel: use a running one (Zygote.attached)."""
        self.scratch: str | None = None
        process = None
        if channel is None:
            process, channel = self._start(hide)
        super().__init__(channel, process)

    def _start(self, hide: Iterable[str | Path]) -> tuple[subprocess.Popen, Channel]:
        self.scratch = tempfile.mkdtemp(prefix="grader-zygote-")
        os.chmod(self.scratch, 0o755)
        scratch = self.scratch
        env = scrubbed(os.environ, NOT_FOR_WORKER)
        env.update(PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1")

        def argv(fd: int) -> list[str]:
            config = {"fd": fd, "scratch": scratch, "hide": hidden_paths(hide, scratch),
                      "expose": sorted({str(REPO.resolve()), os.path.realpath(sys.prefix),
                                        os.path.realpath(sys.base_prefix), scratch})}
            return [sandbox.unshare_path(), *sandbox.NAMESPACE_FLAGS, sys.executable, "-I", "-u", "-c", BOOT,
                    str(REPO), json.dumps(config)]

        return forkserver.launch(argv, env, scratch)

    def spawn(self, impl_file: str | Path, log: IO[bytes],
              new_session: bool = False) -> tuple[ZygoteWorker, socket.socket]:
        """(ZygoteWorker, our end of its socket) for a worker on impl_file writing to log (an open file).
        new_session is accepted for spawn_worker's signature: the worker never shares our session."""
        slot = sandbox.Slot()
        ours, theirs = socket.socketpair()
        source = os.open(impl_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        request = {"uid": slot.uid, "cgroups": [str(path) for path in slot.cgroups],
                   "limits": dataclasses.asdict(sandbox.LIMITS)}
        try:
            pidfd = self.channel.request(request, [theirs.fileno(), source, log.fileno()])
        except ServerGone:
            slot.release()
            ours.close()
            raise
        finally:
            os.close(source)
            theirs.close()
        return ZygoteWorker(pidfd, slot), ours

    def close(self) -> None:
        """As forkserver.Client.close; the zygote's namespace dies with it. Then our scratch folder goes."""
        super().close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def active() -> Zygote | None:
    """The zygote this process grades with (grader.sandbox.spawn asks), or None."""
    return Zygote.current()


def available() -> bool:
    """Whether this machine can run a zygote: the namespaces sandbox level, and pidfds (Linux 5.3)."""
    return sandbox.level() == "namespaces" and hasattr(os, "pidfd_open")


def hidden_paths(extra: Iterable[str | Path], scratch: str) -> list[str]:
    """tests/, solutions/, instructor/ and the extra folders, unless one holds something the zygote needs."""
    needed = [Path(path).resolve() for path in (GRADER, sys.prefix, sys.base_prefix, scratch)]
    candidates = [Path(path).resolve() for path in (TESTS, SOLUTIONS, INSTRUCTOR, *extra) if Path(path).is_dir()]
    return [str(path) for path in candidates if not any(n == path or path in n.parents for n in needed)]


# -- inside: the zygote (root, in its namespaces) -------------------------------------------------------

def _mounts():
    """(mount point, file system type) of every mount, from /proc/self/mountinfo."""
    found = []
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            fields = line.split()
            target = fields[4].encode().decode("unicode_escape")
            found.append((target, fields[fields.index("-") + 1]))
    return found


def _read_only(keep_cgroups):
    for target, kind in _mounts():
        if keep_cgroups and kind in CGROUP_TYPES:
            continue
        try:
            sandbox._remount_read_only(target)
        except OSError:
            if not target.startswith(("/proc/", "/sys/")):
                raise


def _build_view(config):
    """The zygote's file system: everything read-only but the cgroups (each child joins its own, then
    makes them read-only too), the Python install reachable, the hidden folders covered."""
    _read_only(keep_cgroups=True)
    sandbox._tmpfs(config["scratch"], 1, 0o755)
    stage_root = Path(config["scratch"], ".stage")
    stage_root.mkdir()
    for path in config["expose"]:
        sandbox._expose(path, stage_root)
    os.rmdir(stage_root)
    for path in config["hide"]:
        sandbox._tmpfs(path, 1, 0o755, read_only=True)


def _warm():
    """Import what every worker needs and pay torch's first-use costs, once for all of them."""
    import gc

    from grader.sandbox import worker

    worker.warm_up(meta=True)
    gc.freeze()  # the forks' collections skip torch's objects (and leave their pages shared)


def serve(config_text: str) -> None:
    """The zygote's loop: one fork per request, until its last channel closes."""
    config = json.loads(config_text)
    _build_view(config)
    sandbox.make_undumpable()
    sys.dont_write_bytecode = True
    _warm()
    forkserver.serve(socket.socket(fileno=config["fd"]),
                     lambda request, fds: _child(request, fds, config["scratch"]), max_fds=3)


def _unshare(flags):
    sandbox._check(sandbox._libc().unshare(ctypes.c_int(flags)), "unshare")


def _child(request, fds, scratch):
    """One student's tree: cgroups, new namespaces, then its init. Never returns."""
    try:
        worker_fd, source_fd, log_fd = fds
        sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)
        cgroups.join(request["cgroups"])
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        with os.fdopen(source_fd, "rb") as handle:
            source = handle.read()
        _unshare(STUDENT_NAMESPACES)
        init = os.fork()
        if init == 0:
            _init(request, worker_fd, source, scratch)
        os.close(worker_fd)
        _, status = os.waitpid(init, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    except BaseException as error:
        print(f"sandbox: the zygote could not start the worker: {error!r}", file=sys.stderr, flush=True)
        os._exit(70)


def _init(request, worker_fd, source, scratch):
    """PID 1 of the student's namespaces (root): its own /proc and scratch, then the worker. Never returns."""
    try:
        sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)
        sandbox.mount(None, "/", None, sandbox.MS_REC | sandbox.MS_PRIVATE)
        sandbox.mount("proc", "/proc", "proc",
                      sandbox.MS_NOSUID | sandbox.MS_NODEV | sandbox.MS_NOEXEC | sandbox.MS_RDONLY)
        for target, kind in _mounts():
            if kind in CGROUP_TYPES:
                sandbox._remount_read_only(target)
        sandbox._tmpfs(scratch, request["limits"]["scratch_mb"], 0o755)
        impl_copy = Path(scratch, "attention.py")
        impl_copy.write_bytes(source)
        impl_copy.chmod(0o444)
        home = Path(scratch, "home")
        home.mkdir(mode=0o700)
        os.chown(home, request["uid"], request["uid"])
        config = {"uid": request["uid"], "limits": request["limits"], "mounts": True, "fd": worker_fd,
                  "level": "namespaces"}
        worker = os.fork()
        if worker == 0:
            sandbox._become_worker(config, str(impl_copy), str(home))
        os.close(worker_fd)
        while True:
            pid, status = os.wait()
            if pid == worker:
                os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    except BaseException as error:
        print(f"sandbox: the worker's namespace could not be set up: {error!r}", file=sys.stderr, flush=True)
        os._exit(70)
