"""A cold grade's two processes from one import of torch: the twin start (grader.launch.PLAIN, a TwinLauncher).

The pytest child and the worker each import torch (about a CPU-second each); a grade of one submission started
them as two new Pythons. The twin is one new Python, started isolated (-I) with the worker's environment (the
allow-list of grader.sandbox.spawn.worker_environment) and nothing of the grader's on its command line but the
init's BootConfig: it imports torch, then forks.

- The child enters the sandbox as a plain start does, at the level the grader checked: new namespaces made here
  (the `unshare` of the plain start) and the init's sequence (grader.sandbox.boot.start) at the namespaces level,
  the init's sequence alone at the uid level, the worker's loop at none. Before anything else it closes every
  descriptor but its socket and log: the key, report and control pipes never reach the sandbox.
- The parent becomes the pytest child. Only now does it read, from its control pipe, what a pytest child is
  given (its arguments, environment, handover and folder); it adopts the child as its worker (as it adopts one
  the grader started) and runs pytest.

So the worker's memory holds torch, the grader's modules and the worker's own environment, as a plain start's
does, and nothing of pytest's, the tests' or the grader's environment. What a fork shares and an exec would not:
the address layout, glibc's stack canary and CPython's hash secret are the pytest child's too. The pytest child
reads the worker's messages through grader.sandbox.wire (no pickle, frames of bounded size, tensors rebuilt by
torch.frombuffer from checked sizes), a boundary that rests on neither.

Linux only (fork after torch's import); not at the user-namespace level, whose namespaces only the `unshare`
program may be allowed to make (Ubuntu's AppArmor restriction): there the plain start stays.
"""

import json
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from typing import NoReturn

from grader.sandbox import boot, linux
from grader.sandbox.boot import START_FAILED
from grader.sandbox.boot_config import BootConfig

LEVELS = ("namespaces", "uid", "none")  # where a twin starts; elsewhere the plain start
NAMESPACES = (linux.CLONE_NEWNS | linux.CLONE_NEWUTS | linux.CLONE_NEWIPC | linux.CLONE_NEWPID
              | linux.CLONE_NEWNET)  # the plain start's `unshare --pid --mount --net --ipc --uts`


def available(level: str) -> bool:
    return sys.platform.startswith("linux") and level in LEVELS


def main(argv: list[str]) -> NoReturn:
    """argv: [BootConfig as JSON (its fd is set here), worker log fd, control pipe fd]."""
    config, log_fd, control_fd = BootConfig.from_json(argv[0]), int(argv[1]), int(argv[2])
    import torch  # noqa: F401 - the import both processes share

    ours, theirs = (end.detach() for end in socket.socketpair())  # plain descriptors: no object closes them later
    parent = os.getpid()
    worker = os.fork()
    if worker == 0:
        try:
            _become_worker(replace(config, fd=theirs), log_fd, parent)
        except BaseException as error:
            print(f"sandbox: the twin's worker could not start: {error!r}", file=sys.stderr, flush=True)
        os._exit(START_FAILED)
    os.close(theirs)
    os.close(log_fd)
    _become_pytest(control_fd, ours, worker)


def _become_worker(config: BootConfig, log_fd: int, parent: int) -> NoReturn:
    """Close what is not the worker's, then start it at config.level."""
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the pytest child ended before the signal was set
        os._exit(START_FAILED)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    boot.close_all_but(config.fd)

    if config.level == "namespaces":
        run_in_namespaces(config.fd, lambda: boot.start(config))
    if config.level == "uid":
        boot.start(config)
    if config.level == "none":
        from grader.sandbox import worker

        os.chdir("/")
        worker.main([str(config.fd), str(config.impl), config.warm, str(config.limits.address_space_mb)])
        os._exit(0)
    raise ValueError(f"no twin start at the {config.level} level")


def run_in_namespaces(fd: int, init: Callable[[], object]) -> NoReturn:
    """What the plain start's `unshare --pid --fork --kill-child --mount --mount-proc --net --ipc --uts` does:
    make the namespaces, and run init() as their PID 1 (root made private, a fresh /proc), which dies with this
    process. This one closes fd (init's alone), waits, and exits with init's status. The twin's worker and
    instructor.warm.pair's zygote start so."""
    linux.unshare(NAMESPACES)
    pid = os.fork()
    if pid == 0:
        try:
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
            linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
            linux.mount("proc", "/proc", "proc", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
        except BaseException as error:
            print(f"sandbox: could not be built: {error!r}", file=sys.stderr, flush=True)
            os._exit(START_FAILED)
        init()
        os._exit(0)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _become_pytest(control_fd: int, worker_fd: int, worker_pid: int) -> NoReturn:
    """Read what the pytest child is given, adopt the worker, run pytest (as `python -m pytest ARGS` would)."""
    import pytest  # only now: nothing of pytest's is in the worker's memory

    from grader.handover import GivenHandover, Handover

    with os.fdopen(control_fd, "rb") as control:
        request = json.loads(control.read())
    # The pytest child's own environment (grader.run.child_env): the worker's (its HOME a folder the worker's uid
    # owns at the uid level, its PATH the default) is not for a process that holds the key.
    take_environment(request["env"])
    handover = replace(Handover.from_environ(request["handover"]), worker_fd=worker_fd, worker_pid=worker_pid)
    os.chdir(request["cwd"])
    sys.argv = ["pytest", *request["args"]]
    raise SystemExit(pytest.main(request["args"], plugins=[GivenHandover(handover)]))


def take_environment(env: dict[str, str]) -> None:
    """Become what a new process started with env would be, before anything reads it: the parent of a twin
    (its pytest child) and of a warm pair (instructor.warm.pair: its prefork server) started with the
    environment of the process they forked. The one write of the environment in the grader and the instructor
    tools (tests/tooling/test_structure.py)."""
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # found again from TMPDIR
    sys.dont_write_bytecode = env.get("PYTHONDONTWRITEBYTECODE", "") != ""  # which -I ignored at start
