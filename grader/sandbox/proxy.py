"""The test side of the worker: a module-like `Submission` object.

`submission.some_function(x, y)` sends the tensors to the worker, runs the
student's function there and returns the result; `submission.SomeModule(16, 4)` returns a
`RemoteObject` whose weights and forward live in the worker. `submission.measure(fn, *args)` returns
fn's result and the call's Measurement (operation counts, memory peak, arguments after the call).
Student code never runs in this process. A crashed or hung worker fails the call in progress and is
restarted for the next one.
"""

import contextlib
import os
import signal
import socket
import tempfile
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any, Protocol

import torch

from grader.lab import LAB
from grader.logtail import read_tail
from grader.paths import IMPL_NAME
from grader.sandbox import clock, wire
from grader.sandbox.errors import (
    FromScratchViolation,
    MissingName,
    RaisedInSubmission,
    RefusedInSubmission,
    SandboxFailed,
    SubmissionCrashed,
    SubmissionError,
    SubmissionImportError,
    SubmissionTimeout,
    local_exception_class,
)
from grader.sandbox.isolation import SandboxUnavailable
from grader.sandbox.policy import Limits
from grader.sandbox.spawn import spawn_worker

START_ATTEMPTS = 3
START_BACKOFF_S = (0.5, 2.0)  # between attempts: a loaded machine gets time to settle


FORBIDDEN = LAB.forbidden


class AdoptedWorker:
    """A worker the grader started before pytest (so that both import torch at once): not our child,
    so it can be signalled but not waited for."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def poll(self) -> None:
        return None

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self) -> None:
        return None


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


class WorkerStarter(Protocol):
    """What starts this run's workers, where it is not a new process (a batch's zygote: instructor.warm)."""

    def __call__(self, impl_file: Path, log: IO[bytes], limits: Limits) -> tuple[Any, socket.socket]:
        """A worker on impl_file writing to log, within limits: (its process, with pid, poll(), kill() and
        wait() as a subprocess.Popen's; our end of its socket). OSError: it could not be started."""

    def gone(self) -> bool:
        """Whether what forks the workers has ended: a worker that died with it did not crash."""


class Submission:
    """Proxy for the student's file, running in a worker process."""

    def __init__(self, impl_file: str | os.PathLike[str], limits: Limits | None = None,
                 log_path: str | None = None, hide: list[str] | None = None, level: str | None = None,
                 on_ready: Callable[[], None] | None = None, start_worker: WorkerStarter | None = None) -> None:
        """level: the isolation the grader checked for this run (None: this process's own level).
        on_ready: called each time a worker stands ready (the grader hears of it: a run that times out with
        no worker ever ready failed before any of the student's code ran).
        start_worker: how a worker is started (a batch's zygote forks one: instructor.warm); by default a new
        process (grader.sandbox.spawn.spawn_worker) at level."""
        self.impl_file = str(Path(impl_file).resolve())
        self.level = level
        self.limits = limits or Limits()
        self.ready = False
        self.hide = hide or []
        self.process: Any = None  # a SandboxedProcess, a zygote's child or an AdoptedWorker
        self.conn: Connection | None = None
        self.generation = 0
        self.info: dict[str, Any] | None = None
        self.timed_out: dict[str, int] = {}
        if log_path is None:  # a log of our own, removed with this object (the grader passes the run's)
            descriptor, log_path = tempfile.mkstemp(prefix="grader-worker-", suffix=".log")
            os.close(descriptor)
            weakref.finalize(self, _remove, log_path)
        self.log_path = log_path
        self.exception_classes: dict[str, type[RaisedInSubmission]] = {}
        self.flags: list[str] = []
        self.import_failure: SubmissionError | None = None
        self.on_ready = on_ready
        self.start_worker = start_worker

    # -- process ------------------------------------------------------------------------------

    def start(self) -> None:
        """Spawn the worker; returns at once (the import runs while the caller goes on)."""
        with open(self.log_path, "ab") as log:
            if self.start_worker is not None:
                self.process, sock = self.start_worker(Path(self.impl_file), log, self.limits)
            else:
                self.process, sock = spawn_worker(self.impl_file, log, limits=self.limits, hide=self.hide,
                                                 level=self.level)
        self._connect(sock.detach())

    def adopt(self, fd: int, pid: int) -> None:
        """Use a worker the grader already started on this file (see grader.run)."""
        self.process = AdoptedWorker(pid)
        self._connect(fd)

    def _connect(self, fd):
        self.conn = Connection(fd)
        self.generation += 1
        self.info = None
        self.ready = False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.conn is not None:
            self.conn.close()
        self.process = self.conn = None
        self.ready = False

    def _ensure(self) -> dict[str, Any]:
        """Start the worker and import the submission if needed; raise if that import failed.

        An import that crashed or hung is decided once: every later test fails at once with the same
        reason, without a new worker or another wait.
        """
        if self.import_failure is not None:
            raise type(self.import_failure)(str(self.import_failure))
        if not self.ready:
            self._start_until_ready()
        if self.info is None:
            self.info = self._hello()
            self.exception_classes = {
                name: local_exception_class(name, bases) for name, bases in self.info["exceptions"].items()
            }
        if self.info["import_error"]:
            raise SubmissionImportError(describe_import_error(self.info["import_error"]))
        return self.info

    def _start_until_ready(self) -> None:
        """Start the worker until it says it is ready (the sandbox stands, torch is imported), retrying with
        backoff. Nothing of the student's has run before that point, so a failure there is the grader's."""
        problem = ""
        for attempt in range(START_ATTEMPTS):
            if attempt:
                time.sleep(START_BACKOFF_S[min(attempt, len(START_BACKOFF_S)) - 1])
            try:
                if self.process is None:
                    self.start()
                problem = self._wait_ready()
            except (OSError, SandboxUnavailable) as error:  # the start itself failed: no unshare, slot or folder
                problem = f"{type(error).__name__}: {error}"
            if not problem:
                self.ready = True
                if self.on_ready is not None:
                    self.on_ready()
                return
            self.stop()
        raise SandboxFailed(f"the sandbox for the student's code did not start ({START_ATTEMPTS} attempts): {problem}")

    def _wait_ready(self) -> str:
        """"" once the worker's ready frame arrived, else what went wrong."""
        assert self.conn is not None
        try:
            if not self.conn.poll(self.limits.start_seconds):
                return f"no sign of life within {self.limits.start_seconds:g} s"
            reply = wire.decode(self.conn.recv_bytes(wire.MAX_FRAME))
        except (EOFError, OSError, wire.ProtocolError) as error:
            time.sleep(0.2)
            code = self.process.poll() if self.process else None
            tail = self.log_tail(8)
            return f"it ended before it was ready ({'exit code ' + str(code) if code is not None else error!r})" + (
                f"; its log:\n{tail}" if tail else "")
        return "" if reply == wire.READY else f"its first message was not the ready signal: {str(reply)[:200]}"

    def _hello(self):
        try:
            return self._request({"op": "hello"}, self.limits.import_seconds, f"importing {IMPL_NAME}")
        except (SubmissionCrashed, SubmissionTimeout) as error:
            self.import_failure = type(error)(f"{error}\n{FIX_IMPORT_FIRST}")
            raise self.import_failure from None

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = read_tail(self.log_path)
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _request(self, message, timeout, doing):
        try:
            self.conn.send_bytes(wire.encode(message))
            ready = self._wait_reply(timeout)
            if not ready:
                self.stop()
                raise SubmissionTimeout(
                    f"{doing} did not finish within {timeout:g} s (an infinite loop, waiting, or far too slow; "
                    "time the machine kept it waiting for a CPU is not counted); it was stopped"
                )
            reply = wire.decode(self.conn.recv_bytes(wire.MAX_FRAME))
        except wire.ProtocolError as error:
            self.stop()
            raise SubmissionCrashed(f"the process running your code sent a message the grader refuses while "
                                    f"{doing} ({error}): was the grader's code in the worker changed?") from None
        except (EOFError, OSError):
            code = self.process.poll() if self.process else None
            if code is None and self.process is not None:
                time.sleep(0.2)
                code = self.process.poll()
            self.stop()
            if self.start_worker is not None and self.start_worker.gone():
                raise SandboxFailed(f"the server that forks the workers ended while {doing}") from None
            tail = self.log_tail()
            how = "" if code is None else f"exit code {code}{'' if code >= 0 else ', killed by a signal'}: "
            raise SubmissionCrashed(
                f"the process running your code died while {doing} "
                f"({how}a crash, sys.exit/os._exit, or running out of memory)"
                + (f"\nlast output:\n{tail}" if tail else "")
            ) from None
        if not wire.well_formed_reply(message["op"], reply):
            self.stop()
            raise SubmissionCrashed(f"the worker sent a malformed reply while {doing}")
        if not reply["ok"]:
            if reply.get("stats"):  # a call that failed because what the lab forbids or a refused action raised
                self.enforce(reply["stats"], doing.removeprefix("running "))
            raise self._rebuild(reply["error"], doing)
        return reply

    def _wait_reply(self, seconds: float) -> bool:
        """Whether a reply arrived before the request was charged seconds (grader.sandbox.clock): wall time
        less the time the worker waited for a CPU, so a loaded machine does not time a correct call out, and
        code that sleeps or blocks is stopped as soon as code that computes. Most calls answer within the first
        step: the worker's threads are read only for those that do not, and counted from then on (the first
        step's wait goes uncounted: a few hundredths of a second against a budget of seconds)."""
        assert self.conn is not None
        step = 0.02
        started = time.monotonic()
        if self.conn.poll(step):
            return True
        before = clock.tree_waits(self.process)
        while not self.conn.poll(step):
            if clock.charged(time.monotonic() - started, before, clock.tree_waits(self.process)) >= seconds:
                return self.conn.poll(0)  # a reply that came while this process itself waited for a CPU
            step = min(step * 2, 0.25)
        return True

    def _rebuild(self, remote, doing):
        if remote.get("submission_classes"):
            cls = self.exception_classes.get(remote["submission_classes"][0])
        else:
            cls = None
        cls = cls or local_exception_class(remote["type"], remote["bases"])
        error = cls(remote["message"])
        error.remote = dict(remote, doing=doing)
        return error

    def call(self, message: dict[str, Any], doing: str, target: str) -> dict[str, Any]:
        """Send one request; raise the student's error, a crash or a timeout as SubmissionError.

        target names what runs (`a_function`, `AModule.forward`): two timeouts of one
        target skip its later calls, and only its own.
        """
        strikes = self.timed_out.get(target, 0)
        if strikes >= 2:  # decided before any restart: a skipped call costs no new worker
            raise SubmissionTimeout(f"{doing} was not run: it already timed out twice in this run")
        self._ensure()
        try:
            timeout = self.limits.call_seconds if not strikes else min(self.limits.call_seconds, 2.0)
            return self._request(message, timeout, doing)
        except SubmissionTimeout:
            self.timed_out[target] = strikes + 1
            raise

    def enforce(self, stats: dict, label: str) -> None:
        """Fail a call whose stats show what the lab forbids (lab/lab.json) or a refused action, and flag it."""
        if stats["forbidden"]:
            used = ", ".join(stats["forbidden"])
            flag = f"from-scratch: {label} called {FORBIDDEN['what']} ({used})"
            if flag not in self.flags:
                self.flags.append(flag)
            raise FromScratchViolation(
                f"{label} called {FORBIDDEN['what']} ({used}). This lab asks you to {FORBIDDEN['advice']}; "
                "remove that call."
            )
        if stats.get("refused"):
            reason = stats["refused"][0]
            flag = f"sandbox: {label}: {reason}"
            if flag not in self.flags:
                self.flags.append(flag)
            raise RefusedInSubmission(f"{label}: {reason}; the grader refused it.")

    def measure(self, target: "_Remote", /, *args: object, **kwargs: object) -> tuple[object, "Measurement"]:
        """target(*args, **kwargs), where target is a function, class or object of the submission:
        (its value, the Measurement of that call)."""
        if not isinstance(target, _Remote):
            raise TypeError(f"measure: target must be a function, class or object of the submission, got {target!r}")
        return target._measured_call(args, kwargs)

    # -- module-like access --------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        info = self._ensure()
        if name in self.exception_classes:
            return self.exception_classes[name]
        if name in info["functions"] or name in info["classes"]:
            return RemoteCallable(self, name)
        raise MissingName(f"{IMPL_NAME} does not define `{name}` (was it renamed or deleted?)")


FIX_IMPORT_FIRST = "Fix this first: no test can run until the file imports."


def describe_import_error(error: dict[str, Any]) -> str:
    if error["type"] == "SystemExit":
        what = f"{IMPL_NAME} called sys.exit({error['message']}) while being imported"
    else:
        where = f" (line {error['line']}: {error['code'].strip()})" if error.get("line") else ""
        what = f"importing {IMPL_NAME} failed with {error['type']}: {error['message']}{where}"
    return f"{what}\n{FIX_IMPORT_FIRST}"


def _pack(value: Any) -> Any:
    if isinstance(value, RemoteObject):
        return wire.remote_ref(value._handle)
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    return value


def _export(value: Any) -> Any:
    return wire.walk(value, _pack)


def _import(submission: "Submission", value: Any) -> Any:
    def unpack(item: Any) -> Any:
        if wire.is_remote_ref(item):
            return RemoteObject(submission, item["__remote__"], item.get("type", "object"))
        return item

    return wire.walk(value, unpack)


@dataclass(frozen=True)
class Measurement:
    """One call as the worker's meters saw it (see grader.sandbox.guard), and its arguments as it left them."""

    op_count: int
    largest_bytes: int
    op_shapes: list[list]
    multiply_adds: int
    args_after: list[torch.Tensor | None]  # each positional argument after the call (None: not a tensor)
    created_on: dict[str, int]  # device type -> most elements of a tensor an operation newly created there

    @classmethod
    def from_reply(cls, reply: dict) -> "Measurement":
        stats = reply["stats"]
        return cls(stats["op_count"], stats["largest_bytes"], stats["op_shapes"], stats["multiply_adds"],
                   reply["args_after"], stats["created_on"])


class _Remote:
    """Shared call machinery of remote functions, classes and objects."""

    def _message(self):
        raise NotImplementedError

    def _label(self):
        raise NotImplementedError

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._measured_call(args, kwargs)[0]

    def _measured_call(self, args, kwargs):
        message = dict(self._message(), op="call", args=_export(args), kwargs=_export(kwargs))
        reply = self._submission.call(message, f"running {self._label()}", self._label())
        self._submission.enforce(reply["stats"], self._label())
        return _import(self._submission, reply["value"]), Measurement.from_reply(reply)

    def grad(self, args, wrt, cotangents, **kwargs):
        """Gradients of sum(output_i * cotangents[i]) with respect to args[i] for i in wrt."""
        message = dict(
            self._message(), op="grad", args=_export(tuple(args)), kwargs=_export(kwargs),
            wrt=list(wrt), cotangents=_export(list(cotangents)),
        )
        reply = self._submission.call(message, f"running the backward pass of {self._label()}", self._label())
        self._submission.enforce(reply["stats"], self._label())
        return reply["value"]


class RemoteCallable(_Remote):
    """A function or class of the submission, called in the worker."""

    def __init__(self, submission: Submission, name: str) -> None:
        self._submission = submission
        self._name = name

    def _message(self):
        return {"handle": None, "name": self._name}

    def _label(self):
        return self._name

    def __repr__(self) -> str:
        return f"<submission.{self._name}>"


class RemoteObject(_Remote):
    """An object living in the worker (a module instance, for example)."""

    def __init__(self, submission: Submission, handle: int, type_name: str, method: str | None = None) -> None:
        self._submission = submission
        self._handle = handle
        self._type = type_name
        self._method = method
        self._generation = submission.generation

    def _message(self):
        if self._generation != self._submission.generation:
            raise SubmissionCrashed(
                f"this {self._type} object was lost when the process running your code was restarted"
            )
        return {"handle": self._handle, "name": self._method}

    def _label(self):
        return f"{self._type}.{self._method or 'forward'}"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in ("forward", "train", "eval", "double", "float", "to", "half", "bfloat16",
                    "parameters", "named_parameters", "state_dict", "zero_grad", "requires_grad_"):
            return RemoteObject(self._submission, self._handle, self._type, method=name)
        message = dict(self._message(), op="getattr", name=name)
        reply = self._submission.call(message, f"reading {self._type}.{name}", f"{self._type}.{name}")
        return _import(self._submission, reply["value"])

    def load_params(self, params: dict[str, torch.Tensor]) -> None:
        """Copy tensors into the object's parameters, by dotted name (e.g. "w_q.weight")."""
        message = dict(self._message(), op="load_params", params=_export(params))
        self._submission.call(message, f"setting the parameters of {self._type}", f"{self._type}.load_params")

    def __repr__(self) -> str:
        return f"<remote {self._type}>"
