"""Start the worker process (kept free of torch, so the grader itself starts fast)."""

import os
import socket
import subprocess
import sys

from grader import REPO

PRIVATE = ("GRADER_REPORT_FD", "GRADER_KEY_FD", "GRADER_WORKER_FD", "GRADER_WORKER_PID")


def spawn_worker(impl_file, log, new_session=False):
    """Start `python -m grader.worker` on impl_file; returns (process, our end of its socket)."""
    parent_sock, child_sock = socket.socketpair()
    env = {key: value for key, value in os.environ.items() if key not in PRIVATE}
    env.update(PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")  # print() reaches the log at once
    process = subprocess.Popen(
        [sys.executable, "-m", "grader.worker", str(child_sock.fileno()), str(impl_file)],
        pass_fds=[child_sock.fileno()],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        cwd=os.path.dirname(impl_file),
        env=env,
        start_new_session=new_session,
    )
    child_sock.close()
    return process, parent_sock
