"""What grader.prefork and grader.sandbox.zygote share: a server that imported something once and then only
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
import threading
from collections.abc import Callable
from typing import NoReturn

ATTACH = {"attach": True}
REAP_EVERY_S = 1.0


class ServerGone(RuntimeError):
    """The server is gone or refused a request (the grading setup is broken, not a student)."""


class Channel:
    """A client's control socket to a fork server; safe to use from several threads."""

    def __init__(self, control: socket.socket) -> None:
        self.lock = threading.Lock()
        self.control = control
        self.gone = False  # set once a request found the server gone: start or attach to another

    def request(self, message: dict, fds: list[int]) -> int:
        """Send message with fds; the pidfd of the child the server forked for it."""
        try:
            with self.lock:
                socket.send_fds(self.control, [json.dumps(message).encode()], fds)
                reply, received, _, _ = socket.recv_fds(self.control, 1024, 1)
        except OSError as error:
            self.gone = True
            raise ServerGone(f"the server is gone ({error})") from None
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
            with self.lock:
                socket.send_fds(self.control, [json.dumps(ATTACH).encode()], [theirs.fileno()])
                reply = self.control.recv(1024)
        except OSError as error:
            ours.close()
            raise ServerGone(f"the server is gone ({error})") from None
        finally:
            theirs.close()
        if reply != b"ok":
            ours.close()
            raise ServerGone(f"the server did not attach a channel (reply {reply[:200]!r})")
        return ours

    def close(self) -> None:
        self.control.close()


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
