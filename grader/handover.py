"""What the grader hands its pytest child, as one typed value.

A plain launch writes it into the child's environment (`to_environ`) and the child reads it back once, at
start-up (`from_environ`); a warm launch (instructor.warm.prefork) gives the forked child the value itself,
with its file descriptors renumbered (`renumbered`). Nothing below the plugin's start-up reads the environment.
"""

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pytest

from grader.paths import Env
from grader.sandbox.policy import Limits, limits_from

if TYPE_CHECKING:  # a type only: the proxy imports torch, which the grader's own process never does
    from grader.sandbox.proxy import WorkerStarter

#: the fields that are file descriptors, and the variable each travels in
FD_FIELDS = {"key_fd": Env.KEY_FD, "report_fd": Env.REPORT_FD, "worker_fd": Env.WORKER_FD}


@dataclass(frozen=True)
class Handover:
    """key_fd and report_fd: the one-time HMAC key and the signed results' pipe (absent in a plain pytest run);
    worker_fd and worker_pid: a worker the grader started before pytest; worker_log: where the worker writes;
    limits: the worker's limits; hide: folders no worker may see (batch: the class); level: the isolation the
    grader checked (the child does not probe again); collect_only: list the tests and start no worker."""

    key_fd: int | None = None
    report_fd: int | None = None
    worker_fd: int | None = None
    worker_pid: int | None = None
    worker_log: str | None = None
    limits: Limits | None = None
    hide: tuple[str, ...] = ()
    level: str | None = None
    collect_only: bool = False

    def fds(self) -> dict[str, int]:
        """field name -> file descriptor, for the fields that hold one."""
        return {name: getattr(self, name) for name in FD_FIELDS if getattr(self, name) is not None}

    def renumbered(self, numbers: Mapping[str, int]) -> "Handover":
        """The same handover where the descriptors arrived under other numbers (field name -> number)."""
        if set(numbers) != set(self.fds()):
            raise ValueError(f"the handover's descriptors are {sorted(self.fds())}; {sorted(numbers)} arrived")
        return replace(self, key_fd=numbers.get("key_fd"), report_fd=numbers.get("report_fd"),
                       worker_fd=numbers.get("worker_fd"))

    def to_environ(self) -> dict[str, str]:
        env = {FD_FIELDS[name]: str(fd) for name, fd in self.fds().items()}
        if self.worker_pid is not None:
            env[Env.WORKER_PID] = str(self.worker_pid)
        if self.worker_log is not None:
            env[Env.WORKER_LOG] = self.worker_log
        if self.limits is not None:
            env[Env.LIMITS] = json.dumps(self.limits.to_json())
        if self.hide:
            env[Env.SANDBOX_HIDE] = os.pathsep.join(self.hide)
        if self.level is not None:  # a variable of its own: GRADER_SANDBOX stays what the user said
            env[Env.HANDOVER_LEVEL] = self.level
        if self.collect_only:
            env[Env.COLLECT_ONLY] = "1"
        return env

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> "Handover":
        """Read back what to_environ wrote; limits not given there are the defaults with the GRADER_* overrides."""
        def number(name: str) -> int | None:
            return int(environ[name]) if name in environ else None

        limits = Limits.from_json(json.loads(environ[Env.LIMITS])) if Env.LIMITS in environ else limits_from(environ)
        return cls(
            **{name: number(variable) for name, variable in FD_FIELDS.items()},
            worker_pid=number(Env.WORKER_PID),
            worker_log=environ.get(Env.WORKER_LOG),
            limits=limits,
            hide=tuple(path for path in environ.get(Env.SANDBOX_HIDE, "").split(os.pathsep) if path),
            level=environ.get(Env.HANDOVER_LEVEL) or None,
            collect_only=bool(environ.get(Env.COLLECT_ONLY)),
        )


HANDOVER = pytest.StashKey[Handover]()
WORKER_STARTER = pytest.StashKey["WorkerStarter"]()


class GivenHandover:
    """A pytest plugin that gives the run its handover directly (a warm launch): pytest.main(args,
    plugins=[GivenHandover(handover)]). It runs before grader.plugin's configure, which reads it.
    start_worker: how the run starts a worker again after one crashed (a batch's zygote:
    instructor.warm.prefork); by default a new process."""

    def __init__(self, handover: Handover, start_worker: "WorkerStarter | None" = None) -> None:
        self.handover = handover
        self.start_worker = start_worker

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[HANDOVER] = self.handover
        if self.start_worker is not None:
            config.stash[WORKER_STARTER] = self.start_worker

