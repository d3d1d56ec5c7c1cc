"""How a grading run starts its two processes: the pytest child that runs the suites, and the worker that
runs the student's code. grade() takes a Launcher. PLAIN, for a process that grades one submission, starts one new
Python that imports torch once and becomes both (grader.sandbox.twin), where the level allows it, and otherwise
each as a new process, as PLAIN_BATCH always does. `instructor batch` passes a warm launcher (instructor.warm) that
forks both from servers that imported torch once."""

import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from grader.handover import Handover
from grader.sandbox import isolation, twin
from grader.sandbox.policy import DEFAULT, Limits
from grader.sandbox.spawn import spawn_twin, spawn_worker


class Launcher(Protocol):
    @property
    def worker_before_pytest(self) -> bool:
        """Whether grader.run.run_pytest starts the worker itself, through this launcher, before pytest (both then
        import torch at once: a second off `make test`); otherwise the pytest child starts it. The rule, said here
        only: a worker that is a child of the grading process could reach that process's file descriptors through
        /proc, and a process that grades several students (batch, mutants, a Dask host) holds every run's pipes.
        So True where the process grades one submission and the twin start (grader.sandbox.twin) cannot be had
        (PLAIN at the user-namespace level, or off Linux) or the worker is no child of it (batch's zygote); False
        where the pytest child starts it: PLAIN's twin start, which forks the worker from the Python that becomes
        the pytest child, and a plain worker of a process that grades several (PLAIN_BATCH)."""

    def start_pytest(self, argv: list[str], env: dict[str, str], cwd: Path, handover: Handover,
                     stdout: int | IO[bytes]) -> Any:
        """Start `python -m pytest` (argv) with env, in its own session, and give it handover (with the file
        descriptors that names). Returns a Popen-like process."""

    def start_worker(self, impl_file: Path, log: IO[bytes], public_only: bool, limits: Limits,
                     hide: Sequence[str]) -> tuple[Any, socket.socket]:
        """Start the worker on impl_file; (its process, our end of its socket)."""


class PlainLauncher:
    """Each process is a new one: `python -m pytest`, and the worker through grader.sandbox.spawn (a child of
    the process that starts it)."""

    def __init__(self, worker_before_pytest: bool) -> None:
        self.worker_before_pytest = worker_before_pytest

    def start_pytest(self, argv: list[str], env: dict[str, str], cwd: Path, handover: Handover,
                     stdout: int | IO[bytes]) -> subprocess.Popen:
        """The handover travels in the new process's environment (grader.handover)."""
        return subprocess.Popen(argv, pass_fds=tuple(handover.fds().values()), stdin=subprocess.DEVNULL,
                                stdout=stdout, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True,
                                env={**env, **handover.to_environ()})

    def start_worker(self, impl_file: Path, log: IO[bytes], public_only: bool, limits: Limits,
                     hide: Sequence[str]) -> tuple[Any, socket.socket]:
        return spawn_worker(impl_file, log, new_session=True, public_only=public_only, limits=limits, hide=hide)


class TwinLauncher:
    """For a process that grades one submission: both processes from one new Python that imports torch once
    (grader.sandbox.twin), at the levels where that can be; elsewhere the plain starts, the worker before pytest."""

    @property
    def worker_before_pytest(self) -> bool:
        return not twin.available(isolation.level())

    def start_pytest(self, argv: list[str], env: dict[str, str], cwd: Path, handover: Handover,
                     stdout: int | IO[bytes]) -> subprocess.Popen:
        if (handover.worker_fd is not None or handover.collect_only or handover.worker_log is None
                or handover.level is None or not twin.available(handover.level)):
            return _PLAIN_FIRST.start_pytest(argv, env, cwd, handover, stdout)
        return spawn_twin(argv[argv.index("--impl") + 1], argv[argv.index("pytest") + 1:], env,
                          handover.to_environ(), cwd, handover.fds().values(), stdout, handover.worker_log,
                          handover.level, handover.limits or DEFAULT, handover.hide)

    def start_worker(self, impl_file: Path, log: IO[bytes], public_only: bool, limits: Limits,
                     hide: Sequence[str]) -> tuple[Any, socket.socket]:
        return _PLAIN_FIRST.start_worker(impl_file, log, public_only, limits, hide)


_PLAIN_FIRST = PlainLauncher(worker_before_pytest=True)
PLAIN = TwinLauncher()  # for a process that grades one submission
PLAIN_BATCH = PlainLauncher(worker_before_pytest=False)  # for one that grades several: batch's, without a zygote
