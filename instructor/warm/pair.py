"""Both warm servers from one import of torch, as grader.sandbox.twin starts a cold grade's two processes.

A batch (and each Dask host) starts a zygote and a prefork server, and each imported torch (about a CPU-second
each). The pair is one new Python, started isolated (-I) with the zygote's environment (the workers' allow-list)
and nothing on its command line but the zygote's configuration and two descriptor numbers. It imports torch,
then forks:

- The child closes every descriptor but the zygote's channel, makes the namespaces `unshare` made for a plain
  zygote start (PID, mount, network, IPC, UTS) and forks their PID 1, which mounts a fresh /proc and becomes the
  zygote (instructor.warm.zygote.serve: its view, then its loop).
- The parent reads the prefork server's environment from a pipe, only now, and becomes the prefork server
  (instructor.warm.prefork.serve).

So the zygote's memory holds torch and the grader's modules, as a plain start's does, and nothing of pytest's
or of the prefork server's environment. What the fork leaves shared (the address layout, glibc's stack canary,
CPython's hash secret) is what a twin start shares between a pytest child and its worker: the trust model of
docs/grading.md. Killing the prefork server's process group ends the zygote with it.

    zygote, prefork = start(hide=[class_folder], prefork_env=child_env())
"""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

from grader.paths import GRADER, REPO
from grader.sandbox import boot
from grader.sandbox.boot import START_FAILED
from grader.sandbox.twin import run_in_namespaces
from instructor.warm.forkserver import Channel
from instructor.warm.prefork import Prefork
from instructor.warm.zygote import Zygote, serve, zygote_environment

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from instructor.warm.pair import main; main(sys.argv[2:])"


def start(hide: Iterable[str | Path], prefork_env: dict[str, str]) -> tuple[Zygote, Prefork]:
    """A zygote whose view also hides the folders in hide, and a prefork server with prefork_env, from one
    Python. The prefork client owns the process: closing it ends both."""
    view, root, env = zygote_environment(hide)
    zygote_ours, zygote_theirs = socket.socketpair()
    prefork_ours, prefork_theirs = socket.socketpair()
    control_read, control_write = os.pipe()
    config = {"fd": zygote_theirs.fileno(), "view": view.to_json(), "root": root}
    argv = [sys.executable, "-I", "-u", "-c", BOOT, str(GRADER.parent), json.dumps(config),
            str(prefork_theirs.fileno()), str(control_read)]
    process = None
    try:
        process = subprocess.Popen(argv, pass_fds=[zygote_theirs.fileno(), prefork_theirs.fileno(), control_read],
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, env=env, cwd=root, start_new_session=True)
        os.close(control_read)
        control_read = -1
        with os.fdopen(control_write, "wb") as control:
            control_write = -1
            control.write(json.dumps({"env": prefork_env, "cwd": str(REPO)}).encode())
    except BaseException:  # nothing of a start that failed stays: no process, socket or folder
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for fd in (control_read, control_write):
            if fd >= 0:
                os.close(fd)
        zygote_ours.close()
        prefork_ours.close()
        shutil.rmtree(root, ignore_errors=True)
        raise
    finally:
        zygote_theirs.close()
        prefork_theirs.close()
    return Zygote(Channel(zygote_ours), scratch=root), Prefork(channel=Channel(prefork_ours), process=process)


# -- inside: the pair's one Python --------------------------------------------------------------------

def main(argv: list[str]) -> NoReturn:
    """argv: [the zygote's configuration (JSON), the prefork server's channel fd, the control pipe's fd]."""
    config_text, prefork_fd, control_fd = argv[0], int(argv[1]), int(argv[2])
    zygote_fd = json.loads(config_text)["fd"]
    import torch  # noqa: F401 - the import both servers share

    if os.fork() == 0:
        try:
            _become_zygote(config_text, zygote_fd)
        except BaseException as error:
            print(f"sandbox: the pair's zygote could not start: {error!r}", file=sys.stderr, flush=True)
        os._exit(START_FAILED)
    os.close(zygote_fd)
    _become_prefork(prefork_fd, control_fd)


def _become_zygote(config_text: str, fd: int) -> NoReturn:
    """Close what is not the zygote's, make its namespaces as a plain start's `unshare` did, and serve from their
    PID 1. It does not end with the prefork server (a crash of one is no reason to kill every running student's
    worker): with its last channel, as a zygote does, or with the process group, which closing the prefork
    server's client kills."""
    boot.close_all_but(fd)
    run_in_namespaces(fd, lambda: serve(config_text))


def _become_prefork(fd: int, control_fd: int) -> NoReturn:
    """Take the prefork server's environment and folder (as a new process would have them), then serve."""
    from grader.sandbox.twin import take_environment
    from instructor.warm import prefork

    with os.fdopen(control_fd, "rb") as control:
        request = json.loads(control.read())
    take_environment(request["env"])
    os.chdir(request["cwd"])
    prefork.serve(fd)
    os._exit(0)
