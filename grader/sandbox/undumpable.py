"""A pytest plugin, loaded into the graded pytest child only (`-p grader.sandbox.undumpable`, grader.run): that
process holds the run's one-time HMAC key, so it makes itself undumpable as pytest configures, before any test
starts a worker (no /proc/PID/mem, no ptrace, no core file for anyone but root with CAP_SYS_PTRACE)."""

from typing import TYPE_CHECKING

from grader.sandbox import linux

if TYPE_CHECKING:
    import pytest


def pytest_configure(config: "pytest.Config") -> None:
    linux.make_undumpable()
