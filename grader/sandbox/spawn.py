"""Start the worker process (kept free of torch, so the grader itself starts fast), sandboxed as
well as this machine allows (grader.sandbox.isolation)."""

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING

from grader.paths import NOT_FOR_WORKER, REPO, Env, scrubbed
from grader.sandbox import isolation as sandbox

if TYPE_CHECKING:
    from grader.sandbox.zygote import ZygoteWorker

UNSANDBOXED = ("import sys; sys.path.insert(0, sys.argv[1]); from grader.sandbox.worker import main; "
               "main(sys.argv[2:])")


def spawn_worker(impl_file: str | Path, log: IO[bytes], new_session: bool = False,
                 public_only: bool = False) -> "tuple[sandbox.SandboxedProcess | ZygoteWorker, socket.socket]":
    """Start the worker on impl_file; returns (process, our end of its socket).

    Python starts isolated and unbuffered (-I -u; -I: no PYTHONPATH, no user site, no script folder on
    sys.path): only the grader, the venv and the student's attention.py, imported by path, are reachable.
    public_only: the run grades the public suite only, so the worker skips warming what only the hidden
    suite uses (grader.sandbox.worker.warm_up).
    """
    from grader.sandbox import zygote

    active = zygote.active()
    if active is not None:  # batch: a fork of the zygote, which has imported torch already
        return active.spawn(impl_file, log)
    parent_sock, child_sock = socket.socketpair()
    fd = child_sock.fileno()
    env = scrubbed(os.environ, NOT_FOR_WORKER)
    env.update({"PYTHONDONTWRITEBYTECODE": "1", Env.WORKER_WARM: "public" if public_only else "all"})
    chosen = sandbox.level()
    slot: sandbox.Slot | None
    if chosen == "none":
        scratch = tempfile.mkdtemp(prefix="grader-scratch-")
        argv, slot = [sys.executable, "-I", "-u", "-c", UNSANDBOXED, str(REPO), str(fd), str(impl_file)], None
        env.update(HOME=scratch, TMPDIR=scratch)
    else:
        argv, slot, scratch = sandbox.command(impl_file, fd, chosen)
    try:
        process = sandbox.SandboxedProcess(
            argv, pass_fds=[fd], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            cwd=scratch, env=env, start_new_session=new_session,
        )
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    process.slot, process.scratch = slot, scratch
    child_sock.close()
    return process, parent_sock
