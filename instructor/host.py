"""One zygote and one prefork server per host, shared by every Dask worker process grading there.

A warm pair costs about 5 CPU-seconds to start (each imports torch); a host with N worker processes would pay
that N times. The first worker process on a host starts the pair and answers on an abstract Unix socket named
after this checkout's interpreter and folder; each later one attaches through it and gets channels of its own
(grader.forkserver), so the servers outlive the process that started them and end when the last one using
them does. Whoever cannot attach (the starter is busy dying, the name is held by someone else) starts a pair
of its own, as before.

Only a process of our own uid is answered or believed (SO_PEERCRED, both ways). A student's worker cannot
reach the name: at the namespace levels it runs in a network namespace of its own, where the name does not
exist, and at the uid-only level it is another uid.
"""

import contextlib
import hashlib
import json
import os
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field

from grader.paths import REPO
from grader.prefork import Prefork
from grader.run import start_servers
from grader.sandbox.isolation import private_dir
from grader.sandbox.zygote import Zygote

ATTACH_TIMEOUT_S = 120.0  # the starter's servers may still be importing torch
BIND_ATTEMPTS = 40
RETRY_S = 0.05


@dataclass
class HostServers:
    tasks: str  # the folder for the submissions of this host's tasks; the zygote hides it
    servers: list[Zygote | Prefork] = field(default_factory=list)
    started_here: bool = False


_SHARED: list[HostServers] = []
_LOCK = threading.Lock()


def shared() -> HostServers:
    """This host's servers, attached to (or started) on this process's first call and used from then on."""
    with _LOCK:
        if not _SHARED:
            host = _attach_or_start()
            for server in host.servers:
                server.__enter__()  # this process grades with them until it ends
            _SHARED.append(host)
        return _SHARED[0]


def _digest() -> str:
    """One per user, interpreter and checkout."""
    return hashlib.sha256(f"{os.geteuid()}\0{sys.executable}\0{REPO.resolve()}".encode()).hexdigest()[:24]


def socket_name() -> bytes:
    """The abstract socket of this host's servers."""
    return b"\0grader-host-" + _digest().encode()


def _attach_or_start() -> HostServers:
    for _ in range(BIND_ATTEMPTS):
        attached = _attach()
        if attached is not None:
            return attached
        listener = _bind()
        if listener is not None:
            host = _start()
            threading.Thread(target=_answer, args=(listener, host), name="grader-host", daemon=True).start()
            return host
        time.sleep(RETRY_S)  # another process holds the name and is about to listen, or just let it go
    return _start()


def _start() -> HostServers:
    """New servers. The tasks folder is the same for every batch of this checkout, and never removed: a folder
    removed and made again would no longer be covered in a running zygote's view."""
    tasks = str(private_dir(f"grader-tasks-{_digest()}"))
    return HostServers(tasks, start_servers([tasks]), started_here=True)


def _bind() -> socket.socket | None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(socket_name())
    except OSError:
        listener.close()
        return None
    listener.listen()
    return listener


def _attach() -> HostServers | None:
    """The servers of the process that holds the name, or None if none answers as our own uid."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        try:
            connection.connect(socket_name())
        except OSError:
            return None
        if peer_uid(connection) != os.geteuid():
            return None
        connection.settimeout(ATTACH_TIMEOUT_S)
        try:
            message, fds, _, _ = socket.recv_fds(connection, 65536, 2)
        except OSError:
            return None
    if not message:
        for fd in fds:
            os.close(fd)
        return None
    info = json.loads(message)
    servers: list[Zygote | Prefork] = [
        Zygote.attached(socket.socket(fileno=fd)) if kind == "zygote" else Prefork.attached(socket.socket(fileno=fd))
        for kind, fd in zip(info["servers"], fds, strict=True)
    ]
    return HostServers(info["tasks"], servers)


def _answer(listener: socket.socket, host: HostServers) -> None:
    """The starter's thread: give each process of our uid that connects a channel to each server."""
    while True:
        connection, _ = listener.accept()
        with connection, contextlib.suppress(Exception):  # a server gone or a caller gone: that caller starts its own
            if peer_uid(connection) != os.geteuid():
                continue
            channels = [server.channel.attach() for server in host.servers]
            try:
                info = {"tasks": host.tasks, "servers": [_kind(server) for server in host.servers]}
                socket.send_fds(connection, [json.dumps(info).encode()], [channel.fileno() for channel in channels])
            finally:
                for channel in channels:
                    channel.close()


def _kind(server: Zygote | Prefork) -> str:
    return "zygote" if isinstance(server, Zygote) else "prefork"


def peer_uid(connection: socket.socket) -> int:
    _, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return uid
