"""A warm pytest process from which `batch` forks each student's graded pytest child.

A graded pytest child imports torch (its oracle) and pytest: about 2 CPU-seconds of every student's grade.
The prefork server imports them once and then only forks; each fork runs `pytest.main` with the arguments,
environment and file descriptors (key pipe, report pipe, worker socket, log) that grader.run would give a
new `python -m pytest`. The server runs no student code and holds no key: each key pipe reaches only the
fork it was sent for, which reads it as a new child would. A fork starts from the server's state, which
never ran pytest, so nothing of one student's run reaches the next.

    with Prefork() as server:                  # the client: the process that runs the grades
        process = server.start(args, env, cwd, fds, stdout)   # what subprocess.Popen would give grader.run
"""

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading

from grader.paths import REPO

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from grader.prefork import serve; serve(int(sys.argv[2]))"
REAP_EVERY_S = 1.0
_ACTIVE: list["Prefork"] = []


class PreforkError(RuntimeError):
    """The prefork server is gone (the grading setup is broken, not a student)."""


class ForkedProcess:
    """A pytest child forked by the server, seen from the client through a pidfd (it is the server's child,
    not ours). It leads its own process group, as a child started with start_new_session does."""

    def __init__(self, pidfd: int) -> None:
        self.pidfd: int | None = pidfd
        with open(f"/proc/self/fdinfo/{pidfd}") as info:
            self.pid = int(next(line for line in info if line.startswith("Pid:")).split()[1])

    def poll(self) -> int | None:
        """None while it runs; -SIGKILL once it ended (its exit status belongs to the server)."""
        if self.pidfd is not None and not select.select([self.pidfd], [], [], 0)[0]:
            return None
        return -signal.SIGKILL

    def wait(self, timeout: float | None = None) -> int:
        if self.pidfd is not None:
            if not select.select([self.pidfd], [], [], timeout)[0]:
                assert timeout is not None  # without a timeout, select returns only once the child ended
                raise subprocess.TimeoutExpired("pytest", timeout)
            os.close(self.pidfd)
            self.pidfd = None
        return -signal.SIGKILL


class Prefork:
    """Starts the server; start() forks one pytest child. Safe to use from several threads."""

    def __init__(self, env: dict) -> None:
        self.lock = threading.Lock()
        self.control, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-c", BOOT, str(REPO), str(theirs.fileno())], pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=REPO,
            start_new_session=True)
        theirs.close()

    def start(self, args: list, env: dict, cwd: str, fds: dict, stdout: int) -> ForkedProcess:
        """Fork a child running pytest.main(args) with env, in cwd, stdout and stderr to the fd stdout;
        fds maps environment names to file descriptors the child gets (their numbers are rewritten)."""
        names = sorted(fds)
        request = {"args": args, "env": env, "cwd": str(cwd), "names": names}
        try:
            with self.lock:
                socket.send_fds(self.control, [json.dumps(request).encode()], [stdout, *(fds[n] for n in names)])
                reply, received, _, _ = socket.recv_fds(self.control, 1024, 1)
        except OSError as error:
            raise PreforkError(f"the prefork server is gone ({error})") from None
        if reply != b"ok" or len(received) != 1:
            raise PreforkError(f"the prefork server did not start pytest (reply {reply[:200]!r})")
        return ForkedProcess(received[0])

    def close(self) -> None:
        self.control.close()  # the server exits when its control socket closes
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def __enter__(self) -> "Prefork":
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.remove(self)
        self.close()


def active() -> Prefork | None:
    """The prefork server this process starts its pytest children from (grader.run asks), or None."""
    return _ACTIVE[-1] if _ACTIVE else None


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
    import grader.sandbox.isolation  # noqa: F401

    for name in (*(f"_pytest.{plugin}" for plugin in default_plugins), "pytest_jsonreport.plugin",
                 "pytest_metadata.plugin"):
        importlib.import_module(name)
    torch.set_num_threads(1)
    torch.ones(2, device="meta") + 1
    gc.freeze()


def serve(fd: int) -> None:
    _warm()
    control = socket.socket(fileno=fd)
    while True:
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        if not select.select([control], [], [], REAP_EVERY_S)[0]:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(control, 1 << 20, 16)
        except OSError:
            os._exit(0)
        if not message:
            os._exit(0)
        child = os.fork()
        if child == 0:
            _run(control, json.loads(message), fds)
        for received in fds:
            os.close(received)
        pidfd = os.pidfd_open(child)
        socket.send_fds(control, [b"ok"], [pidfd])
        os.close(pidfd)


def _run(control, request, fds):
    """The forked child: become what `python -m pytest ARGS` started by grader.run would be. Never returns."""
    code = 70
    try:
        control.close()
        os.setsid()
        stdout, *passed = fds
        os.dup2(stdout, 1)
        os.dup2(stdout, 2)
        os.close(stdout)
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ.update({name: str(fd) for name, fd in zip(request["names"], passed, strict=True)})
        os.chdir(request["cwd"])
        import pytest

        sys.argv = ["pytest", *request["args"]]
        code = pytest.main(request["args"])
    except BaseException as error:
        print(f"grader: the forked pytest failed: {error!r}", file=sys.stderr)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(int(code))
