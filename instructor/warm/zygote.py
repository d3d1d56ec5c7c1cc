"""A sandboxed zygote: one process that has imported torch once, from which each student's worker is forked.

`batch` (and each Dask worker host) grades many students; without a zygote every worker is a new Python
that imports torch (about 2 CPU-seconds). The zygote starts as a worker's sandbox does (PID, network, IPC, UTS
and mount namespaces, and the same allow-list view, built by grader.sandbox.view.build), forked with the prefork
server from one Python that imported torch (instructor.warm.pair); it imports the worker's modules, and then
only forks. It imports its own code (instructor.warm) from the checkout before it builds its view, which holds
grader/ alone, as every worker's does.
It holds nothing secret: no key, no submission (each source arrives as a file descriptor that only the
forked child reads), and it runs nothing a request sends.

Each fork (the "child") joins its student's cgroups, makes new mount, PID, network, IPC and UTS
namespaces and forks the student's init (PID 1 there, root), which mounts a fresh /proc and a private tmpfs
scratch, then runs the plain start's init sequence (grader.sandbox.boot.run_init): a copy of attention.py,
and the worker with its own uid, limits and no new privileges. So one student's worker sees neither the
zygote nor another student: not their processes, files, network or IPC. Killing the child (or the zygote)
ends the init by its parent-death signal, and the kernel then ends every process of that namespace. The
zygote kills the children of a channel that closes (its client ended), and exits when its last channel
closes.

    zygote, prefork = pair.start(hide=[class_folder], prefork_env=child_env())  # the client: what grades
    worker, sock = zygote.spawn(impl_file, log, limits)  # as grader.sandbox.spawn.spawn_worker
"""

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO, NoReturn

from grader.paths import REPO
from grader.sandbox import linux
from grader.sandbox.boot import START_FAILED, run_init
from grader.sandbox.boot_config import BootConfig
from grader.sandbox.isolation import level
from grader.sandbox.policy import DEFAULT, Limits
from grader.sandbox.slots import Slot
from grader.sandbox.spawn import worker_environment, worker_home
from grader.sandbox.twin import NAMESPACES
from grader.sandbox.view import View, build, mount_point, mount_scratch, plan, worker_reads
from instructor.warm import forkserver
from instructor.warm.forkserver import Channel, ServerGone

# -- the client side ---------------------------------------------------------------------------------


class ZygoteWorker(forkserver.Forked):
    """A worker forked by the zygote, reached through the pidfd of the zygote's child that is its ancestor
    (`pid` is that child's pid here)."""

    def __init__(self, pidfd: int, slot: Slot) -> None:
        super().__init__(pidfd)
        self.slot: Slot | None = slot

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
    """A client of the zygote (started with the prefork server, by instructor.warm.pair); spawn() asks it for one
    student's worker. Safe to use from several threads."""

    KIND = "zygote"

    def __init__(self, channel: Channel, scratch: str | None = None) -> None:
        """channel: to the zygote (from pair.start, or Zygote.attached). scratch: the folder its root is mounted
        on, removed when this client closes (the client of the process that started it)."""
        super().__init__(channel)
        self.scratch = scratch

    def spawn(self, impl_file: str | Path, log: IO[bytes],
              limits: Limits = DEFAULT) -> tuple[ZygoteWorker, socket.socket]:
        """(ZygoteWorker, our end of its socket) for a worker on impl_file writing to log (an open file).
        The child joins its cgroups through the files we open here: the zygote's view has no /sys/fs/cgroup."""
        slot = Slot(limits)
        ours, theirs = socket.socketpair()
        fds = [theirs.fileno(), os.open(impl_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)]
        try:
            fds += [os.open(Path(group, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC) for group in slot.cgroups]
            request = {"uid": slot.uid, "limits": limits.to_json()}
            pidfd = self.channel.request(request, [*fds, log.fileno()])
        except (ServerGone, OSError):
            slot.release()
            ours.close()
            raise
        finally:
            for fd in fds[1:]:
                os.close(fd)
            theirs.close()
        return ZygoteWorker(pidfd, slot), ours

    def close(self) -> None:
        """As forkserver.Client.close; the zygote's namespace dies with it. Then our scratch folder goes."""
        super().close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def zygote_environment(hide: Iterable[str | Path]) -> tuple[View, str, dict[str, str]]:
    """A zygote's view (the grader's allow-list, also hiding the folders in hide), the new folder its root is
    mounted on, and its environment (each worker's, its home in the worker's scratch)."""
    view = plan(worker_reads(), [str(REPO), *map(str, hide)])
    root = mount_point(view)
    env = worker_environment(os.environ, worker_home("namespaces", root))
    env.update(OMP_NUM_THREADS="1")
    return view, root, env


def available() -> bool:
    """Whether this machine can run a zygote: the namespaces sandbox level, and pidfds (Linux 5.3)."""
    return level() == "namespaces" and hasattr(os, "pidfd_open")


# -- inside: the zygote (root, in its namespaces) -------------------------------------------------------

def _warm():
    """Import what every worker needs and pay torch's first-use costs, once for all of them."""
    import gc

    from grader.sandbox import worker

    worker.warm_up(meta=True)
    gc.freeze()  # the forks' collections skip torch's objects (and leave their pages shared)


def serve(config_text: str) -> None:
    """The zygote's loop: one fork per request, until its last channel closes."""
    config = json.loads(config_text)
    view = View.from_json(config["view"])
    build(view, config["root"])
    linux.make_undumpable()
    sys.dont_write_bytecode = True
    mount_scratch(view, ZYGOTE_SCRATCH_MB)
    tempfile.tempdir = view.scratch  # torch's first use wants a temporary folder
    _warm()
    tempfile.tempdir = None  # each worker finds its own (its TMPDIR is its home)
    forkserver.serve(socket.socket(fileno=config["fd"]), lambda request, fds: _child(request, fds, view),
                     max_fds=MAX_FDS)


ZYGOTE_SCRATCH_MB = 16
MAX_FDS = 5  # the worker's socket, attention.py, up to two cgroups' procs files, the log


def _child(request: dict, fds: list[int], view: View) -> NoReturn:
    """One student's tree: cgroups, new namespaces, then its init. Never returns."""
    try:
        worker_fd, source_fd, *group_fds, log_fd = fds
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        for group_fd in group_fds:
            os.write(group_fd, b"0")
            os.close(group_fd)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        with os.fdopen(source_fd, "rb") as handle:
            source = handle.read()
        linux.unshare(NAMESPACES)  # the plain start's (grader.sandbox.twin)
        init = os.fork()
        if init == 0:
            _init(request, worker_fd, source, view)
        os.close(worker_fd)
        _, status = os.waitpid(init, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    except BaseException as error:
        print(f"sandbox: the zygote could not start the worker: {error!r}", file=sys.stderr, flush=True)
        os._exit(START_FAILED)


def _init(request: dict, worker_fd: int, source: bytes, view: View) -> NoReturn:
    """PID 1 of the student's namespaces (root): its own /proc and scratch, then the worker. Never returns."""
    try:
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
        linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC | linux.MS_RDONLY)
        limits = Limits.from_json(request["limits"])
        scratch = mount_scratch(view, limits.scratch_mb)
        config = BootConfig(fd=worker_fd, level="namespaces", uid=request["uid"], limits=limits, warm="all", view=view)
    except BaseException as error:
        print(f"sandbox: the worker's namespace could not be set up: {error!r}", file=sys.stderr, flush=True)
        os._exit(START_FAILED)
    run_init(config, source, scratch)
