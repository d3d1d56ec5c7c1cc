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
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from grader.handover import Handover
from grader.launch import PLAIN_BATCH
from grader.run import child_env
from grader.sandbox.policy import Limits
from instructor.warm import pair
from instructor.warm.forkserver import Client
from instructor.warm.prefork import Prefork
from instructor.warm.prefork import available as prefork_available
from instructor.warm.zygote import Zygote
from instructor.warm.zygote import available as zygote_available


class WarmLauncher:
    """Forks the pytest child from a prefork server and the worker from a zygote, where each is given;
    starts a new process (grader.launch.PLAIN_BATCH: it grades several students) for what is not."""

    def __init__(self, zygote: Zygote | None = None, prefork: Prefork | None = None,
                 scratch: str | None = None) -> None:
        """scratch: the pytest children's TMPDIR (what torch caches there is the batch's, not the class folder's)."""
        self.zygote = zygote
        self.prefork = prefork
        self.scratch = scratch
        self.worker_before_pytest = zygote is not None  # a zygote's worker is no child of ours (grader.launch)

    def start_pytest(self, argv: list[str], env: dict[str, str], cwd: Path, handover: Handover,
                     stdout: int | IO[bytes]) -> Any:
        """A forked child runs in the prefork server's environment (child_env when it started) and is given
        handover directly, and a channel to the zygote, where there is one, for the workers it starts."""
        if self.prefork is None:
            return PLAIN_BATCH.start_pytest(argv, scratch_env(env, self.scratch), cwd, handover, stdout)
        pytest_args = argv[argv.index("pytest") + 1:]
        out = stdout if isinstance(stdout, int) else stdout.fileno()
        if self.zygote is None or handover.collect_only:
            return self.prefork.start(pytest_args, handover, str(cwd), out)
        with self.zygote.channel.attach() as zygote:  # the child's workers after a crash: forked, not new
            return self.prefork.start(pytest_args, handover, str(cwd), out, zygote)

    def start_worker(self, impl_file: Path, log: IO[bytes], public_only: bool, limits: Limits,
                     hide: Sequence[str]) -> tuple[Any, socket.socket]:
        if self.zygote is None:
            return PLAIN_BATCH.start_worker(impl_file, log, public_only, limits, hide)
        return self.zygote.spawn(impl_file, log, limits)


def scratch_env(env: dict[str, str], scratch: str | None) -> dict[str, str]:
    """env with TMPDIR at scratch, where one is given."""
    return env if scratch is None else {**env, "TMPDIR": scratch}


def start_servers(hide: Sequence[str], scratch: str | None = None) -> list[Client]:
    """Where this machine allows: a zygote whose view also hides the folders in hide, and a prefork server
    (whose children's TMPDIR is scratch, where one is given)."""
    env = scratch_env(child_env(), scratch)
    if zygote_available():  # where a zygote can run, a prefork server can: both from one import of torch
        return list(pair.start(hide, env))
    return [Prefork(env=env)] if prefork_available() else []


def launcher_for(servers: Sequence[Client], scratch: str | None = None) -> WarmLauncher:
    """The launcher that grades with these servers."""
    zygote = next((s for s in servers if isinstance(s, Zygote)), None)
    prefork = next((s for s in servers if isinstance(s, Prefork)), None)
    return WarmLauncher(zygote, prefork, scratch)


@contextlib.contextmanager
def warm_launcher(hide: Sequence[str]) -> Iterator[WarmLauncher]:
    """A launcher with freshly started servers, closed when the block ends. The pytest children write their
    temporary files (torch's caches) into a folder of the batch's own, removed at the end: with TMPDIR inside
    the class folder they would otherwise be listed as students by the next batch."""
    with contextlib.ExitStack() as stack:
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="grader-batch-"))
        servers = [stack.enter_context(server) for server in start_servers(hide, scratch)]
        yield launcher_for(servers, scratch)
