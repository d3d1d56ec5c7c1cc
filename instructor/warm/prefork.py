"""A warm pytest process from which `batch` forks each student's graded pytest child.

A graded pytest child imports torch (its oracle) and pytest: about 2 CPU-seconds of every student's grade.
The prefork server imports them once and then only forks; each fork runs `pytest.main` in the server's
environment (grader.run.child_env), given the handover (grader.handover: key pipe, report pipe, worker socket,
log, limits) as a value rather than through its environment. The server runs no student code and holds no key:
each key pipe reaches only the fork it was sent for, which reads it as a new child would. A fork starts from
the server's state, which never ran pytest, so nothing of one student's run reaches the next.

    with Prefork() as server:                  # the client: the process that runs the grades
        process = server.start(args, handover, cwd, stdout)   # what subprocess.Popen would give grader.run
"""

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from grader.handover import GivenHandover, Handover
from grader.paths import REPO
from instructor.warm import forkserver
from instructor.warm.forkserver import Channel, ServerGone

if TYPE_CHECKING:  # the proxy imports torch, which a client of the server need not
    from grader.sandbox.proxy import WorkerStarter

BOOT = ("import sys; sys.path.insert(0, sys.argv[1]); from instructor.warm.prefork import serve; "
        "serve(int(sys.argv[2]))")


class ForkedProcess(forkserver.Forked):
    """A pytest child forked by the server. It leads its own process group, as a child started with
    start_new_session does."""

    def wait(self, timeout: float | None = None) -> int:
        if self.pidfd is not None:
            if not select.select([self.pidfd], [], [], timeout)[0]:
                assert timeout is not None  # without a timeout, select returns only once the child ended
                raise subprocess.TimeoutExpired("pytest", timeout)
            os.close(self.pidfd)
            self.pidfd = None
        return -signal.SIGKILL


class Prefork(forkserver.Client):
    """Starts the server; start() forks one pytest child. Safe to use from several threads."""

    KIND = "prefork"

    def __init__(self, env: dict | None = None, channel: Channel | None = None,
                 process: subprocess.Popen | None = None) -> None:
        """env: start a server with that environment. channel: use a running server (Prefork.attached), or the
        one started as process (instructor.warm.pair), which closing this client ends."""
        if channel is None:
            process, channel = forkserver.launch(lambda fd: [sys.executable, "-c", BOOT, str(REPO), str(fd)],
                                                 env, REPO)
        super().__init__(channel, process)

    def start(self, args: list, handover: Handover, cwd: str, stdout: int,
              zygote: socket.socket | None = None) -> ForkedProcess:
        """Fork a child running pytest.main(args) given handover, in cwd, stdout and stderr to the fd stdout;
        the descriptors handover names are passed along and renumbered in the child. zygote: a channel of
        the child's own to the batch's zygote, which then forks the workers it starts again after a crash."""
        fds = handover.fds()
        names = sorted(fds)
        request = {"args": args, "handover": handover.to_environ(), "cwd": str(cwd), "names": names,
                   "zygote": zygote is not None}
        passed = [stdout, *(fds[n] for n in names), *([zygote.fileno()] if zygote is not None else [])]
        return ForkedProcess(self.channel.request(request, passed))


def available() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "pidfd_open")


# -- inside: the server -------------------------------------------------------------------------------

def _warm():
    """What every graded pytest child imports before its first test, and torch's first meta-device operation
    (the hidden suite's tensors on that device import torch._dynamo and sympy: 1.3 CPU-seconds). Then
    gc.freeze(): the forks' collections skip all of that (pytest collects twice at its end: 0.7 CPU-s)."""
    import gc
    import importlib

    import torch
    from _pytest.config import default_plugins

    import grader.plugin  # noqa: F401
    import grader.sandbox.undumpable  # noqa: F401
    import instructor.warm.zygote  # noqa: F401 - a child's channel to the batch's zygote

    for name in (*(f"_pytest.{plugin}" for plugin in default_plugins), "pytest_jsonreport.plugin",
                 "pytest_metadata.plugin"):
        importlib.import_module(name)
    torch.set_num_threads(1)
    torch.ones(2, device="meta") + 1
    gc.freeze()


def serve(fd: int) -> None:
    _warm()
    forkserver.serve(socket.socket(fileno=fd), _run, max_fds=16)


def _run(request, fds):
    """The forked child: become what `python -m pytest ARGS` started by grader.run would be. Never returns."""
    code = 70
    try:
        os.setsid()
        stdout, *passed = fds
        os.dup2(stdout, 1)
        os.dup2(stdout, 2)
        os.close(stdout)
        start_worker = _zygote_starter(passed.pop()) if request["zygote"] else None
        numbers = dict(zip(request["names"], passed, strict=True))
        handover = Handover.from_environ(request["handover"]).renumbered(numbers)
        os.chdir(request["cwd"])
        import pytest

        sys.argv = ["pytest", *request["args"]]
        code = pytest.main(request["args"], plugins=[GivenHandover(handover, start_worker)])
    except BaseException as error:
        print(f"grader: the forked pytest failed: {error!r}", file=sys.stderr)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(int(code))


def _zygote_starter(fd: int) -> "WorkerStarter":
    """The run's WorkerStarter: the zygote at the other end of the channel fd forks its workers, which are this
    child's: the zygote kills them when the channel closes with the child."""
    from instructor.warm.zygote import Zygote

    return _ZygoteStarter(Zygote.attached(socket.socket(fileno=fd)))


class _ZygoteStarter:
    def __init__(self, zygote: Any) -> None:
        self.zygote = zygote

    def __call__(self, impl_file, log, limits):
        try:
            worker, sock = self.zygote.spawn(impl_file, log, limits)
        except ServerGone as error:  # the start failed: retried, then the grader's error (never the student's)
            raise OSError(f"the batch's zygote: {error}") from None
        return _StatusUnknown(worker), sock

    def gone(self) -> bool:
        return self.zygote.channel.ended()


class _StatusUnknown:
    """A zygote's worker as the proxy sees a process it cannot wait for (as grader.sandbox.proxy.AdoptedWorker):
    poll() is always None. The zygote's child ends with SIGKILL whatever the student's code did, and a message
    must not name a signal the code never had; stop() then always kills and waits, which frees the worker's slot.
    pid: the zygote's child, whose tree's waits for a CPU the call timeouts do not charge (grader.sandbox.clock)."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker
        self.pid = worker.pid

    def poll(self) -> None:
        return None

    def kill(self) -> None:
        self.worker.kill()

    def wait(self) -> None:
        self.worker.wait()
