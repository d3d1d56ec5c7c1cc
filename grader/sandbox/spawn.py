"""Start the worker process, sandboxed at the level the grader checked (grader.sandbox.isolation): for whichever
process starts a worker, the grader before its pytest child (when its launcher allows it, grader.launch) or the
pytest child itself (grader.sandbox.proxy). Kept free of torch, so that both start fast.

At a sandboxed level the command runs the sandbox's init (grader.sandbox.boot) under `unshare` where the level has
namespaces; with no sandbox, the worker (grader.sandbox.worker) as a plain child process.
"""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO

from grader.paths import GRADER, REPO
from grader.sandbox import isolation
from grader.sandbox.boot_config import BootConfig
from grader.sandbox.isolation import (
    LEVELS,
    NAMESPACE_FLAGS,
    TRUSTED,
    VIEW_LEVELS,
    SandboxUnavailable,
    traversable,
)
from grader.sandbox.policy import DEFAULT, Limits
from grader.sandbox.slots import Slot
from grader.sandbox.view import HOME, SCRATCH, mount_point, plan, worker_reads

# The files the worker's command lines run, in isolated mode (-I): each makes this grader importable and calls
# one main(argv), so the start is followed by import. The init's, at a sandboxed level: grader.sandbox.boot.main;
# the worker's own, with no sandbox: grader.sandbox.worker.main.
BOOT_SCRIPT = GRADER / "sandbox" / "boot_script.py"
WORKER_SCRIPT = GRADER / "sandbox" / "worker_script.py"
TWIN_SCRIPT = GRADER / "sandbox" / "twin_script.py"  # the twin start's (grader.sandbox.twin)


KEPT_VARIABLES = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "OMP_NUM_THREADS", "SYSTEMROOT")  # SYSTEMROOT: Windows


def worker_environment(environ: Mapping[str, str], home: str) -> dict[str, str]:
    """The worker's environment, an allow-list: the locale and thread settings, and its home (HOME, TMPDIR);
    nothing that names a path or a secret of the grader's."""
    env = {name: environ[name] for name in KEPT_VARIABLES if name in environ}
    env.update(PYTHONDONTWRITEBYTECODE="1", PATH=os.defpath, HOME=home, TMPDIR=home)
    return env


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
    """(argv, slot, host folder to remove afterwards) to start the worker on impl_file with socket fd: the
    sandbox's init, grader.sandbox.boot.main, through BOOT_SCRIPT."""
    config, slot, folder = boot_config(impl_file, fd, chosen, limits, hide, warm)
    return sandboxed_python(chosen, [str(BOOT_SCRIPT), config.to_json()]), slot, folder


def boot_config(impl_file: str | os.PathLike[str], fd: int, chosen: str, limits: Limits = DEFAULT,
                hide: Iterable[str | os.PathLike[str]] = (), warm: str = "all") -> tuple[BootConfig, Slot | None, str]:
    """(the init's BootConfig, slot, host folder to remove afterwards) of a worker on impl_file with socket fd at
    a sandboxed level: its uid and cgroups, and its view (or, at the uid level, its scratch folder)."""
    slot = Slot(limits) if chosen in TRUSTED else None
    try:
        view, root, scratch = None, None, None
        if chosen in VIEW_LEVELS:
            view = plan(worker_reads(), secrets(impl_file, hide))
            folder = root = mount_point(view)
        else:  # the uid level: no view; a scratch folder other uids can enter, outside TMPDIR
            folder = scratch = tempfile.mkdtemp(prefix="grader-scratch-", dir=scratch_base())
            os.chmod(folder, 0o755)
        config = BootConfig(fd=fd, level=chosen, uid=slot.uid if slot else None, limits=limits, warm=warm,
                            impl=str(impl_file), cgroups=tuple(str(path) for path in slot.cgroups) if slot else (),
                            view=view, root=root, scratch=scratch)
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    return config, slot, folder


def sandboxed_python(chosen: str, args: list[str]) -> list[str]:
    """The command line of an isolated, unbuffered Python (-I -u: print() reaches the log at once) given args,
    in new namespaces at the levels that have them."""
    python = [sys.executable, "-I", "-u", *args]
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
        if os.path.isdir(base) and traversable(Path(base).resolve()) and os.access(base, os.W_OK):
            return base
    raise SandboxUnavailable("no folder that the sandbox's uid can enter for its scratch (tried /dev/shm, /tmp)")


def unshare_path() -> str:
    """Where `unshare` is (the namespace levels are only chosen where it was found)."""
    path = shutil.which("unshare")
    if path is None:
        raise SandboxUnavailable("`unshare` (util-linux) is no longer on PATH: the namespace sandbox cannot start")
    return path


def spawn_worker(impl_file: str | Path, log: IO[bytes], new_session: bool = False, public_only: bool = False,
                 limits: Limits | None = None, hide: Iterable[str | Path] = (), level: str | None = None
                 ) -> tuple[SandboxedProcess, socket.socket]:
    """Start the worker on impl_file; returns (process, our end of its socket).

    Python starts isolated and unbuffered (-I -u; -I: no PYTHONPATH, no user site, no script folder on
    sys.path): only the grader, the venv and the student's file, imported by path, are reachable.
    public_only: the run grades the public suite only, so the worker skips warming what only the hidden
    suite uses (grader.sandbox.worker.warm_up). hide: folders no view may show (batch: the class).
    level: the isolation to start it at (one of isolation.LEVELS; anything else: this process's own level,
    which only a plain pytest run, with no grader above it to check one, leaves to be found here).
    """
    limits = limits or Limits()
    parent_sock, child_sock = socket.socketpair()
    fd = child_sock.fileno()
    warm = "public" if public_only else "all"
    chosen = level if level in LEVELS else isolation.level()
    slot: Slot | None
    if chosen == "none":
        folder = tempfile.mkdtemp(prefix="grader-scratch-")
        argv = [sys.executable, "-I", "-u", str(WORKER_SCRIPT), str(fd), str(impl_file), warm,
                str(limits.address_space_mb)]
        slot = None
        env = worker_environment(os.environ, folder)
    else:
        argv, slot, folder = command(impl_file, fd, chosen, limits, hide, warm)
        env = worker_environment(os.environ, worker_home(chosen, folder))
    try:
        process = SandboxedProcess(
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


def spawn_twin(impl_file: str | Path, pytest_args: list[str], pytest_env: Mapping[str, str],
               handover: Mapping[str, str], cwd: str | Path, pass_fds: Iterable[int], stdout: int | IO[bytes],
               worker_log: str, chosen: str, limits: Limits = DEFAULT,
               hide: Iterable[str | Path] = ()) -> SandboxedProcess:
    """Start the pytest child (`python -m pytest pytest_args` in pytest_env and cwd, given the handover, as
    grader.handover writes it, with the descriptors pass_fds) and its worker on impl_file at level chosen (one
    of grader.sandbox.twin.LEVELS) from one new Python, which imports torch once (grader.sandbox.twin). Returns
    the pytest child, in a session of its own; waiting for it also frees the worker's uid, cgroups and folder."""
    if chosen == "none":
        slot, folder = None, tempfile.mkdtemp(prefix="grader-scratch-")
        config = BootConfig(fd=-1, level=chosen, uid=None, limits=limits, impl=str(impl_file), scratch=folder)
        home = folder
    else:
        config, slot, folder = boot_config(impl_file, -1, chosen, limits, hide)
        home = worker_home(chosen, folder)
    process = None
    try:
        env = worker_environment(os.environ, home)
        env.update(OMP_NUM_THREADS="1")  # the pytest child's (grader.run.child_env): torch reads it at import
        log = os.open(worker_log, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        control_read, control_write = os.pipe()
        try:
            process = SandboxedProcess(
                [sys.executable, "-I", "-u", str(TWIN_SCRIPT), config.to_json(), str(log), str(control_read)],
                pass_fds=(*pass_fds, log, control_read), stdin=subprocess.DEVNULL, stdout=stdout,
                stderr=subprocess.STDOUT, cwd="/", env=env, start_new_session=True)
            process.slot, process.scratch = slot, folder
        finally:
            os.close(log)
            os.close(control_read)
        request = {"args": list(pytest_args), "env": dict(pytest_env), "handover": dict(handover), "cwd": str(cwd)}
        # read by the pytest child once its worker forked; a twin that died first is found by the grader, as a
        # pytest child that stopped before it listed the tests
        with contextlib.suppress(BrokenPipeError), os.fdopen(control_write, "wb") as control:
            control.write(json.dumps(request).encode())
    except BaseException:
        if process is not None:  # waiting frees the slot and the folder
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        else:
            if slot is not None:
                slot.release()
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return process
