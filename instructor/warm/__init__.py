"""batch's accelerators: warm servers that imported torch once and then only fork, and the launcher that
grades with them (a grader.launch.Launcher, passed to grade()).

- zygote.py: a sandboxed process each student's worker is forked from (the same view and boot as a plain start);
- prefork.py: a pytest process each student's graded pytest child is forked from;
- forkserver.py: what both share: the fork loop, control channels, attaching another process to a server.

    with warm_launcher(hide=[class_folder]) as launcher:
        report = grade(folder, "all", launcher=launcher)
"""

import contextlib
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from grader.handover import Handover
from grader.launch import PLAIN
from grader.run import child_env
from grader.sandbox.policy import Limits
from instructor.warm.forkserver import Client
from instructor.warm.prefork import Prefork
from instructor.warm.prefork import available as prefork_available
from instructor.warm.zygote import Zygote
from instructor.warm.zygote import available as zygote_available


class WarmLauncher:
    """Forks the pytest child from a prefork server and the worker from a zygote, where each is given;
    starts a new process (grader.launch.PLAIN) for what is not."""

    def __init__(self, zygote: Zygote | None = None, prefork: Prefork | None = None) -> None:
        self.zygote = zygote
        self.prefork = prefork
        self.detached_workers = zygote is not None  # a zygote's worker is no child of ours

    def start_pytest(self, argv: list[str], env: dict[str, str], cwd: Path, handover: Handover,
                     stdout: int | IO[bytes]) -> Any:
        """A forked child runs in the prefork server's environment (child_env when it started) and is given
        handover directly."""
        if self.prefork is None:
            return PLAIN.start_pytest(argv, env, cwd, handover, stdout)
        pytest_args = argv[argv.index("pytest") + 1:]
        out = stdout if isinstance(stdout, int) else stdout.fileno()
        return self.prefork.start(pytest_args, handover, str(cwd), out)

    def start_worker(self, impl_file: Path, log: IO[bytes], public_only: bool, limits: Limits,
                     hide: Sequence[str]) -> tuple[Any, socket.socket]:
        if self.zygote is None:
            return PLAIN.start_worker(impl_file, log, public_only, limits, hide)
        return self.zygote.spawn(impl_file, log, limits)


def start_servers(hide: Sequence[str]) -> list[Client]:
    """Where this machine allows: a zygote whose view also hides the folders in hide, and a prefork server."""
    servers: list[Client] = []
    if zygote_available():
        servers.append(Zygote(hide=hide))
    if prefork_available():
        servers.append(Prefork(env=child_env()))
    return servers


def launcher_for(servers: Sequence[Client]) -> WarmLauncher:
    """The launcher that grades with these servers."""
    zygote = next((s for s in servers if isinstance(s, Zygote)), None)
    prefork = next((s for s in servers if isinstance(s, Prefork)), None)
    return WarmLauncher(zygote, prefork)


@contextlib.contextmanager
def warm_launcher(hide: Sequence[str]) -> Iterator[WarmLauncher]:
    """A launcher with freshly started servers, closed when the block ends."""
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(server) for server in start_servers(hide)]
        yield launcher_for(servers)
