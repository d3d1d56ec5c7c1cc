"""What instructor.warm.prefork and instructor.warm.zygote share: a server that imported something once and then only
forks, one child per request, and the control channels its clients reach it by.

A request is a JSON object with file descriptors; the server forks a child for it and replies b"ok" with
the child's pidfd. A client may open another channel to the same server (Channel.attach: another process
on the host then uses the same warm server through a channel of its own). The server exits when its last
channel closes.
"""

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from typing import ClassVar, NoReturn, TypeVar

ATTACH = {"attach": True}
C = TypeVar("C", bound="Client")
REAP_EVERY_S = 1.0
# A fork and its reply take milliseconds; a server that says nothing for this long is stuck (in a kernel call
# of its own, say), and the run that waits on it is the grader's failure, reported as one, not a hang.
REPLY_SECONDS = 60.0


class ServerGone(RuntimeError):
    """The server is gone or refused a request (the grading setup is broken, not a student)."""


class Channel:
    """A client's control socket to a fork server; safe to use from several threads."""

    def __init__(self, control: socket.socket, reply_seconds: float = REPLY_SECONDS) -> None:
        self.lock = threading.Lock()
        self.control = control
        self.reply_seconds = reply_seconds
        self.gone = False  # set once a request found the server gone: start or attach to another

    def request(self, message: dict, fds: list[int]) -> int:
        """Send message with fds; the pidfd of the child the server forked for it."""
        reply, received = self._exchange(message, fds)
        if reply != b"ok" or len(received) != 1:
            for fd in received:
                os.close(fd)
            self.gone = not reply
            raise ServerGone(f"the server did not fork (reply {reply[:200]!r})")
        return received[0]

    def attach(self) -> socket.socket:
        """A new channel to the same server, for another process."""
        ours, theirs = socket.socketpair()
        try:
            reply, received = self._exchange(ATTACH, [theirs.fileno()])
        except ServerGone:
            ours.close()
            raise
        finally:
            theirs.close()
        for fd in received:
            os.close(fd)
        if reply != b"ok":
            ours.close()
            raise ServerGone(f"the server did not attach a channel (reply {reply[:200]!r})")
        return ours

    def _exchange(self, message: dict, fds: list[int]) -> tuple[bytes, list[int]]:
        try:
            with self.lock:
                socket.send_fds(self.control, [json.dumps(message).encode()], fds)
                if not select.select([self.control], [], [], self.reply_seconds)[0]:
                    self.gone = True
                    raise ServerGone(f"the server did not answer within {self.reply_seconds:g} s")
                reply, received, _, _ = socket.recv_fds(self.control, 1024, 1)
        except OSError as error:
            self.gone = True
            raise ServerGone(f"the server is gone ({error})") from None
        return reply, received

    def ended(self) -> bool:
        """Whether the server closed this channel (it ended): the socket reads as at its end."""
        try:
            return bool(select.select([self.control], [], [], 0)[0]) and \
                self.control.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def close(self) -> None:
        self.control.close()


class Client:
    """This process's side of one fork server: one it started (`process`), or one another process started
    and handed us a channel to (Client.attached). Used as a context manager, it is closed at the end."""

    KIND: ClassVar[str]  # what instructor.host calls it on the wire

    def __init__(self, channel: Channel, process: subprocess.Popen | None = None) -> None:
        self.channel = channel
        self.process = process

    @classmethod
    def attached(cls: type[C], control: socket.socket) -> C:
        """A client of a server another process started (its channel from Channel.attach)."""
        return cls(channel=Channel(control))

    def close(self) -> None:
        """Close our channel; the server exits when its last one closes (at once, if we started it)."""
        self.channel.close()
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self: C) -> C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def launch(argv: Callable[[int], list[str]], env: dict | None,
           cwd: str | os.PathLike) -> tuple[subprocess.Popen, Channel]:
    """Start a server: argv(fd) is its command line, given the number of its end of the first channel."""
    control, theirs = socket.socketpair()
    process = subprocess.Popen(argv(theirs.fileno()), pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd,
                               start_new_session=True)
    theirs.close()
    return process, Channel(control)


class Forked:
    """A child the server forked, seen from the client through its pidfd: not our child, so its exit status
    is the server's. `pid` is its pid here."""

    def __init__(self, pidfd: int) -> None:
        self.pidfd: int | None = pidfd
        with open(f"/proc/self/fdinfo/{pidfd}") as info:
            self.pid = int(next(line for line in info if line.startswith("Pid:")).split()[1])

    def poll(self) -> int | None:
        """None while it runs; -SIGKILL once it ended."""
        if self.pidfd is None or select.select([self.pidfd], [], [], 0)[0]:
            return -signal.SIGKILL
        return None


def serve(first: socket.socket, fork_child: Callable[[dict, list[int]], NoReturn], max_fds: int) -> NoReturn:
    """The server's loop. fork_child(request, fds) runs in the fork, which has closed every channel. When a
    channel closes (its client ended), the children forked for it are killed: nothing outlives its grade."""
    children: dict[socket.socket, set[int]] = {first: set()}
    while children:
        _reap(children)
        for channel in select.select(list(children), [], [], REAP_EVERY_S)[0]:
            try:
                _answer(channel, children, fork_child, max_fds)
            except (OSError, ValueError):  # the client went away mid-request, or sent nonsense
                _drop(channel, children)
    os._exit(0)  # the zygote is PID 1 of its namespace: every child and worker ends with it


def _answer(channel, children, fork_child, max_fds):
    message, fds, _, _ = socket.recv_fds(channel, 1 << 20, max_fds)
    if not message:
        _drop(channel, children)
        return
    try:
        request = json.loads(message)
        if request == ATTACH:
            for fd in fds:
                os.set_inheritable(fd, False)
                children[socket.socket(fileno=fd)] = set()
            fds = []
            channel.sendall(b"ok")
            return
        child = os.fork()
        if child == 0:
            for each in children:
                each.close()
            fork_child(request, fds)
        children[channel].add(child)
    except BlockingIOError:  # fork failed (no processes left): this request only
        channel.sendall(b"error: fork failed")
        return
    finally:
        for fd in fds:
            os.close(fd)
    pidfd = os.pidfd_open(child)
    try:
        socket.send_fds(channel, [b"ok"], [pidfd])
    finally:
        os.close(pidfd)


def _drop(channel: socket.socket, children: dict[socket.socket, set[int]]) -> None:
    for child in children.pop(channel, ()):
        os.kill(child, signal.SIGKILL)  # not reaped yet, so still ours: never a reused pid
    channel.close()


def _reap(children: dict[socket.socket, set[int]]) -> None:
    with contextlib.suppress(ChildProcessError):
        while pid := os.waitpid(-1, os.WNOHANG)[0]:
            for forked in children.values():
                forked.discard(pid)
