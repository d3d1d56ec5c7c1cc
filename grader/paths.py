"""Every path, suite name and environment variable the grader knows, in one place."""

from collections.abc import Mapping
from pathlib import Path

from grader.lab import LAB

REPO = Path(__file__).resolve().parent.parent
GRADER = REPO / "grader"
INSTRUCTOR = REPO / "instructor"
ASSIGNMENT = REPO / "assignment"
SOLUTIONS = REPO / "solutions"
TESTS = REPO / "tests"
IMPL_NAME = LAB.file  # the student's file (lab/lab.json)
STUB_FILE = ASSIGNMENT / IMPL_NAME
SOLUTION_FILE = SOLUTIONS / IMPL_NAME

SUITES = ("public", "hidden")
SUITE_CHOICES = (*SUITES, "all")


def suite_names(suite: str) -> tuple[str, ...]:
    """The suites a --suite choice means ("all": every suite)."""
    if suite not in SUITE_CHOICES:
        raise ValueError(f"suite must be one of {', '.join(SUITE_CHOICES)}, got {suite!r}")
    return SUITES if suite == "all" else (suite,)


def find_impl(path: str | Path) -> Path | None:
    """The student's file: path itself, path/IMPL_NAME, or the shallowest IMPL_NAME under path."""
    path = Path(path)
    if path.is_file():
        return path
    if (path / IMPL_NAME).is_file():
        return path / IMPL_NAME
    found = sorted(path.rglob(IMPL_NAME), key=lambda p: (len(p.parts), str(p))) if path.is_dir() else []
    found = [p for p in found if p.is_file() and ".venv" not in p.parts and "site-packages" not in p.parts]
    return found[0] if found else None


class Env:
    """Names of the environment variables the grader reads or sets."""

    IMPL = "GRADER_IMPL"  # pytest --impl default (plain pytest runs)
    REPORT_FD = "GRADER_REPORT_FD"  # grader -> pytest child: where signed results go
    KEY_FD = "GRADER_KEY_FD"  # grader -> pytest child: the one-time HMAC key
    WORKER_FD = "GRADER_WORKER_FD"  # grader -> pytest child: a worker started before pytest
    WORKER_PID = "GRADER_WORKER_PID"
    WORKER_LOG = "GRADER_WORKER_LOG"  # where the worker's stdout and stderr go
    LIMITS = "GRADER_LIMITS"  # grader -> pytest child: the Limits of the run, as JSON
    COLLECT_ONLY = "GRADER_COLLECT_ONLY"  # list the tests, start no worker
    CALL_TIMEOUT = "GRADER_CALL_TIMEOUT"  # seconds per call into student code
    IMPORT_TIMEOUT = "GRADER_IMPORT_TIMEOUT"  # seconds for importing the student's file
    RUN_BUDGET = "GRADER_RUN_BUDGET"  # gradescope-run: seconds for the whole run
    SANDBOX = "GRADER_SANDBOX"  # the user's alone: "off", or a weaker level by name (tests of the fallbacks)
    HANDOVER_LEVEL = "GRADER_HANDOVER_LEVEL"  # grader -> pytest child: the level the grader checked, not probed again
    SANDBOX_HIDE = "GRADER_SANDBOX_HIDE"  # grader -> pytest child: folders no worker may see (batch: the class)
    SANDBOX_MEMORY_MB = "GRADER_SANDBOX_MEMORY_MB"  # cgroup memory limit of the worker tree
    WORKER_MEMORY_MB = "GRADER_WORKER_MEMORY_MB"  # the worker's address-space budget


# What each child must not inherit: secrets and hand-overs meant for someone else.
NOT_FOR_PYTEST = (Env.KEY_FD, Env.REPORT_FD, Env.HANDOVER_LEVEL, "GRADER_KEY", "GRADER_REPORT", "PYTEST_")


def scrubbed(environ: Mapping[str, str], hidden: tuple[str, ...]) -> dict[str, str]:
    """environ without the variables whose names start with any of hidden."""
    return {key: value for key, value in environ.items() if not key.startswith(hidden)}
