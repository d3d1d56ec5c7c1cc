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

    def request(self, message: dict, fds: list[int]) -> int:
        """Send message with fds; the pidfd of the child the server forked for it."""
        try:
            with self.lock:
                socket.send_fds(self.control, [json.dumps(message).encode()], fds)
                reply, received, _, _ = socket.recv_fds(self.control, 1024, 1)
        except OSError as error:
            raise ServerGone(f"the server is gone ({error})") from None
        if reply != b"ok" or len(received) != 1:
            for fd in received:
                os.close(fd)
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
    """The server's loop. fork_child(request, fds) runs in the fork, which has closed every channel."""
    channels = [first]
    while channels:
        _reap()
        for channel in select.select(channels, [], [], REAP_EVERY_S)[0]:
            try:
                message, fds, _, _ = socket.recv_fds(channel, 1 << 20, max_fds)
            except OSError:
                message, fds = b"", []
            if not message:
                channels.remove(channel)
                channel.close()
                continue
            request = json.loads(message)
            if request == ATTACH:
                channels.extend(socket.socket(fileno=fd) for fd in fds)
                channel.sendall(b"ok")
                continue
            child = os.fork()
            if child == 0:
                for each in channels:
                    each.close()
                fork_child(request, fds)
            for fd in fds:
                os.close(fd)
            pidfd = os.pidfd_open(child)
            socket.send_fds(channel, [b"ok"], [pidfd])
            os.close(pidfd)
    os._exit(0)  # the zygote is PID 1 of its namespace: every child and worker ends with it


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
