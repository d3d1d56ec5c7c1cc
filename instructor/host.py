"""One zygote and one prefork server per host, shared by every Dask worker process grading there.

A warm pair costs about 5 CPU-seconds to start (each imports torch); a host with N worker processes would pay
that N times. The first worker process starts the pair and answers on an abstract Unix socket named after its
uid, interpreter, checkout and parent (the process whose nannies started the workers: a LocalCluster's client,
one `dask worker --nworkers N`, so one Slurm job); each later sibling attaches through it and gets channels of
its own (instructor.warm.forkserver), so the servers outlive the process that started them and end when the last one
using them does. A process that cannot attach (nobody answers in time, or not as our uid) starts a pair of its
own; one whose servers died forgets them and attaches or starts anew (grade_job then grades that student again).

Only a process of our own uid is answered or believed (SO_PEERCRED, both ways). Dask on this grader needs a
level where every student's worker has a network namespace of its own (instructor.cluster.DASK_LEVELS), in which
neither this name (abstract socket names belong to a network namespace) nor Dask's ports exist. At the
user-namespace level (not root: a Slurm job) the worker's uid is ours, so the uid check does not keep it
out; its network namespace does. There no zygote is started (it needs root): each student's worker is a new
sandboxed Python, and the prefork server alone is shared.
"""

import contextlib
import hashlib
import json
import os
import socket
import stat
import struct
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.paths import REPO
from instructor.warm import WarmLauncher, launcher_for, start_servers
from instructor.warm.forkserver import Client
from instructor.warm.prefork import Prefork
from instructor.warm.zygote import Zygote

CONNECT_TIMEOUT_S = 5.0
ATTACH_TIMEOUT_S = 120.0  # the starter's servers may still be importing torch
BIND_ATTEMPTS = 40
RETRY_S = 0.05
KINDS: dict[str, type[Client]] = {kind.KIND: kind for kind in (Zygote, Prefork)}


def private_dir(name: str) -> Path:
    """The folder name in the temporary directory, made if missing: refused unless it is ours alone."""
    folder = Path(tempfile.gettempdir()) / name
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077 or not stat.S_ISDIR(info.st_mode):
        raise RuntimeError(f"{folder} is not a private directory of this user")
    return folder


class Unusable(Exception):
    """Someone holds the name but gives us no servers: start our own."""


@dataclass
class HostServers:
    tasks: str  # the folder for the submissions of this host's tasks; the zygote hides it
    servers: list[Client] = field(default_factory=list)
    started_here: bool = False
    listener: socket.socket | None = None  # the starter's: answers the siblings

    def broken(self) -> bool:
        return any(server.channel.gone for server in self.servers)

    def launcher(self) -> WarmLauncher:
        return launcher_for(self.servers)


_SHARED: list[HostServers] = []
_LOCK = threading.Lock()


def shared() -> HostServers:
    """This host's servers, attached to (or started) on this process's first call and used from then on."""
    with _LOCK:
        if not _SHARED:
            _SHARED.append(_attach_or_start())  # this process grades with them until it ends, or they break
        return _SHARED[0]


def forget_if_broken() -> bool:
    """If a server of ours died, let go of them all (the next shared() attaches or starts anew); whether it did."""
    with _LOCK:
        if not _SHARED or not _SHARED[0].broken():
            return False
        host = _SHARED.pop()
        if host.listener is not None:
            host.listener.close()
        for server in host.servers:
            server.close()
        return True


def _digest(*scope: object) -> str:
    """One per user, interpreter, checkout and the scope given."""
    text = "\0".join(str(part) for part in (os.geteuid(), sys.executable, REPO.resolve(), *scope))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def socket_name() -> bytes:
    """The abstract socket of the servers of this process and its siblings (the children of one parent)."""
    return b"\0grader-host-" + _digest(os.getppid()).encode()


def _attach_or_start() -> HostServers:
    for _ in range(BIND_ATTEMPTS):
        try:
            attached = _attach()
        except Unusable:
            break
        if attached is not None:
            return attached
        listener = _bind()
        if listener is not None:
            try:
                host = _start()
            except BaseException:
                listener.close()
                raise
            host.listener = listener
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
    """The servers of the process that holds the name; None if nobody listens on it (Unusable if the holder
    is not our uid, or does not answer)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(CONNECT_TIMEOUT_S)
        try:
            connection.connect(socket_name())
        except (ConnectionRefusedError, FileNotFoundError):
            return None
        except OSError as error:
            raise Unusable(f"connecting: {error}") from None
        if peer_uid(connection) != os.geteuid():
            raise Unusable("the name is held by another user")
        connection.settimeout(ATTACH_TIMEOUT_S)
        try:
            message, fds, _, _ = socket.recv_fds(connection, 65536, 2)
        except OSError as error:
            raise Unusable(f"no answer: {error}") from None
    channels = [socket.socket(fileno=fd) for fd in fds]
    try:
        info = json.loads(message)
        tasks, kinds = str(info["tasks"]), list(info["servers"])
        if len(kinds) != len(channels) or not set(kinds) <= set(KINDS):
            raise ValueError(f"servers {kinds} for {len(channels)} channels")
    except (ValueError, KeyError, TypeError) as error:
        for channel in channels:
            channel.close()
        raise Unusable(f"a garbled answer: {error}") from None
    for channel in channels:
        channel.set_inheritable(False)
    servers = [KINDS[kind].attached(channel) for kind, channel in zip(kinds, channels, strict=True)]
    return HostServers(tasks, servers)


def _answer(listener: socket.socket, host: HostServers) -> None:
    """The starter's thread: give each process of our uid that connects a channel to each server."""
    while True:
        try:
            connection, _ = listener.accept()
        except OSError:  # closed: our servers broke and were forgotten
            return
        with connection, contextlib.suppress(Exception):  # a server gone or a caller gone: that caller starts its own
            if peer_uid(connection) != os.geteuid():
                continue
            channels: list[socket.socket] = []
            try:
                for server in host.servers:
                    channels.append(server.channel.attach())
                info = {"tasks": host.tasks, "servers": [server.KIND for server in host.servers]}
                socket.send_fds(connection, [json.dumps(info).encode()], [channel.fileno() for channel in channels])
            finally:
                for channel in channels:
                    channel.close()


def peer_uid(connection: socket.socket) -> int:
    _, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return uid
