"""Start the worker process (kept free of torch, so the grader itself starts fast), sandboxed as
well as this machine allows (grader.sandbox.isolation)."""

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO

from grader.paths import GRADER
from grader.sandbox import isolation as sandbox
from grader.sandbox.policy import Limits

UNSANDBOXED = ("import sys; sys.path.insert(0, sys.argv[1]); from grader.sandbox.worker import main; "
               "main(sys.argv[2:])")


KEPT_VARIABLES = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "OMP_NUM_THREADS", "SYSTEMROOT")  # SYSTEMROOT: Windows


def worker_environment(environ: Mapping[str, str], home: str) -> dict[str, str]:
    """The worker's environment, an allow-list: the locale and thread settings, and its home (HOME, TMPDIR);
    nothing that names a path or a secret of the grader's."""
    env = {name: environ[name] for name in KEPT_VARIABLES if name in environ}
    env.update(PYTHONDONTWRITEBYTECODE="1", PATH=os.defpath, HOME=home, TMPDIR=home)
    return env


def spawn_worker(impl_file: str | Path, log: IO[bytes], new_session: bool = False, public_only: bool = False,
                 limits: Limits | None = None, hide: Iterable[str | Path] = (), level: str | None = None
                 ) -> tuple[sandbox.SandboxedProcess, socket.socket]:
    """Start the worker on impl_file; returns (process, our end of its socket).

    Python starts isolated and unbuffered (-I -u; -I: no PYTHONPATH, no user site, no script folder on
    sys.path): only the grader, the venv and the student's file, imported by path, are reachable.
    public_only: the run grades the public suite only, so the worker skips warming what only the hidden
    suite uses (grader.sandbox.worker.warm_up). hide: folders no view may show (batch: the class).
    level: the isolation to start it at (one of isolation.LEVELS; anything else: this process's own level).
    """
    limits = limits or Limits()
    parent_sock, child_sock = socket.socketpair()
    fd = child_sock.fileno()
    warm = "public" if public_only else "all"
    chosen = level if level in sandbox.LEVELS else sandbox.level()
    slot: sandbox.Slot | None
    if chosen == "none":
        folder = tempfile.mkdtemp(prefix="grader-scratch-")
        argv = [sys.executable, "-I", "-u", "-c", UNSANDBOXED, str(GRADER.parent), str(fd), str(impl_file), warm,
                str(limits.address_space_mb)]
        slot = None
        env = worker_environment(os.environ, folder)
    else:
        argv, slot, folder = sandbox.command(impl_file, fd, chosen, limits, hide, warm)
        env = worker_environment(os.environ, sandbox.worker_home(chosen, folder))
    try:
        process = sandbox.SandboxedProcess(
            argv, pass_fds=[fd], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            cwd="/", env=env, start_new_session=new_session,
        )
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    process.slot, process.scratch = slot, folder
    child_sock.close()
    return process, parent_sock
