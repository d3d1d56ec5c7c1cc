"""The worker's system-call filter (grader.sandbox.seccomp): what it refuses, and that torch, threads and
processes still work under it. Each check runs in a fresh process that installs the filter on itself."""

import platform
import subprocess
import sys
import textwrap

import pytest

from grader.paths import REPO
from grader.sandbox import seccomp

pytestmark = pytest.mark.skipif(platform.machine() not in seccomp.ARCHES or not sys.platform.startswith("linux"),
                                reason="the filter has tables for Linux on x86_64 and aarch64")


def under_filter(code: str) -> str:
    """What code prints, run in a new Python that set no_new_privs and installed the filter first."""
    prelude = textwrap.dedent("""
        import ctypes, errno, os
        from grader.sandbox import linux, seccomp
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        assert seccomp.install()
        libc = ctypes.CDLL(None, use_errno=True)
        def errno_of(result):
            return "ok" if result == 0 else errno.errorcode[ctypes.get_errno()]
    """)
    result = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=REPO, capture_output=True,
                            text=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_every_denied_call_has_a_number_on_every_architecture():
    for machine, numbers in seccomp.NUMBERS.items():
        assert set(seccomp.DENIED) <= set(numbers), machine
        assert len(seccomp.program(machine)) % 8 == 0


def test_new_namespaces_mounts_and_ptrace_are_refused():
    printed = under_filter("""
        print(errno_of(libc.unshare(0x10000000)), errno_of(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
              errno_of(libc.ptrace(0, 0, None, None)), errno_of(libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)))
    """)
    assert printed == "EPERM EPERM EPERM EPERM"


def test_torch_and_threads_work_under_the_filter():
    printed = under_filter("""
        import threading
        import torch
        torch.set_num_threads(2)
        box = []
        thread = threading.Thread(target=lambda: box.append(float((torch.ones(256, 256) @ torch.ones(256, 256))[0, 0])))
        thread.start(); thread.join()
        print(box[0])
    """)
    assert printed == "256.0"


def test_no_process_can_be_started():
    printed = under_filter("""
        import subprocess
        outcomes = []
        for start in (os.fork, lambda: subprocess.run(["true"])):
            try:
                start()
                outcomes.append("started")
            except OSError as error:
                outcomes.append(errno.errorcode[error.errno])
        print(*outcomes, errno_of(libc.syscall(56, 17, 0, 0, 0, 0)))
    """)
    assert printed == "EPERM EPERM EPERM"
