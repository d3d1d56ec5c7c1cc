"""Inside the sandbox: its init (PID 1 of the new namespaces, root) and the worker's start.

One sequence for every start, plain or forked by batch's zygote: join the cgroups, build the view
(grader.sandbox.view), mount the worker's scratch, copy the student's file into it, then fork the worker, which
takes its own uid, its limits, no privileges and its system-call filter (grader.sandbox.seccomp) before
grader.sandbox.worker runs.
"""

import errno
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import NoReturn

from grader.paths import IMPL_NAME
from grader.sandbox import cgroups, linux, seccomp
from grader.sandbox.boot_config import BootConfig
from grader.sandbox.policy import MB, Limits, set_rlimit
from grader.sandbox.view import HOME, build, mount_scratch

START_FAILED = 70  # the init's exit status when the sandbox could not be built


def set_limits(limits: Limits, own_uid: bool) -> None:
    import resource

    if own_uid:  # RLIMIT_NPROC counts every process of the real uid: only meaningful for our own uid
        set_rlimit(resource.RLIMIT_NPROC, limits.processes)
    set_rlimit(resource.RLIMIT_FSIZE, limits.file_size_mb * MB)
    set_rlimit(resource.RLIMIT_NOFILE, limits.open_files)
    set_rlimit(resource.RLIMIT_CPU, limits.cpu_seconds)
    set_rlimit(resource.RLIMIT_CORE, 0)


def prepare_scratch(scratch: Path, source: bytes, uid: int | None) -> tuple[Path, Path]:
    """(the read-only copy of the student's file, the worker's home) in scratch."""
    impl_copy = scratch / IMPL_NAME
    impl_copy.write_bytes(source)
    impl_copy.chmod(0o444)
    home = scratch / HOME
    home.mkdir(mode=0o700)
    if uid is not None:
        os.chown(home, uid, uid)
    return impl_copy, home


def become_worker(config: BootConfig, impl_copy: Path, home: Path) -> NoReturn:
    """The worker's start: its uid (or no capabilities), limits and no new privileges, then its loop."""
    limits = config.limits
    os.chdir(home)
    uid = config.uid
    set_limits(limits, uid is not None)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    elif config.view is not None:
        linux.drop_capabilities()
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    filter_system_calls()
    fd = config.fd
    close_all_but(fd)
    tempfile.tempdir = str(home)  # the worker's temporary folder (its environment names none)
    sys.dont_write_bytecode = True
    from grader.sandbox import worker

    worker.main([str(fd), str(impl_copy), config.warm, str(limits.address_space_mb)])
    os._exit(0)


def close_all_but(fd: int) -> None:
    """Close every descriptor above stderr but fd (the worker's socket)."""
    os.closerange(3, fd)
    os.closerange(fd + 1, 65536)


def filter_system_calls() -> None:
    """The seccomp filter (grader.sandbox.seccomp), where this kernel and architecture have it; a kernel
    without seccomp filters leaves the other layers, and says so in the worker's log."""
    try:
        if not seccomp.install():
            print("sandbox: no system-call filter for this architecture", file=sys.stderr, flush=True)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOSYS):
            raise
        print(f"sandbox: this kernel has no seccomp filters ({error})", file=sys.stderr, flush=True)


def run_init(config: BootConfig, source: bytes, scratch: Path) -> NoReturn:
    """Fork the worker into scratch and wait for it; exit with its status."""
    linux.make_undumpable()
    impl_copy, home = prepare_scratch(scratch, source, config.uid)
    sys.stdout.flush()
    child = os.fork()
    if child == 0:
        try:
            become_worker(config, impl_copy, home)
        except BaseException as error:
            print(f"sandbox: the worker could not start: {error!r}", file=sys.stderr, flush=True)
            os._exit(START_FAILED)
    os.close(config.fd)
    while True:
        pid, status = os.wait()
        if pid == child:
            break
    if config.uid is not None and config.view is None:
        _kill_as(config.uid)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def main(argv: list[str]) -> NoReturn:
    """The plain start's init (grader/sandbox/boot_script.py runs it; argv: [a BootConfig as JSON]): cgroups,
    the view, the scratch, then the worker."""
    try:
        config = BootConfig.from_json(argv[0])
    except BaseException as error:
        print(f"sandbox: could not be built: {error!r}", file=sys.stderr, flush=True)
        os._exit(START_FAILED)
    start(config)


def start(config: BootConfig) -> NoReturn:
    """The init's sequence, in the namespaces the level has (made by `unshare`, or by grader.sandbox.twin):
    cgroups, the view, the scratch, then the worker."""
    try:
        cgroups.join(list(config.cgroups))
        if config.impl is None:
            raise ValueError("a plain start names the student's file")
        source = Path(config.impl).read_bytes()
        if config.view is not None:
            if config.root is None:
                raise ValueError("a view needs its root")
            build(config.view, config.root)
            scratch = mount_scratch(config.view, config.limits.scratch_mb)
        elif config.scratch is not None:
            scratch = Path(config.scratch)
        else:
            raise ValueError("a start without a view needs its scratch folder")
    except BaseException as error:
        print(f"sandbox: could not be built: {error!r}", file=sys.stderr, flush=True)
        os._exit(START_FAILED)
    run_init(config, source, scratch)


def _kill_as(uid: int) -> None:
    """Without a PID namespace: kill every process of the worker's uid (daemons it left)."""
    helper = os.fork()
    if helper == 0:
        os.setresuid(uid, uid, uid)
        try:
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(helper, 0)
