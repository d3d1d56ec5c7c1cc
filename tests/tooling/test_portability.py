"""The grader imports where the Linux sandbox cannot exist (macOS, Windows): no POSIX- or Linux-only
module at the top level of what `grade` loads, and `grade` then says which isolation is in force."""

import json
import subprocess
import sys

from grader.paths import REPO
from tests.tooling.small_checkout import SMALL_MIXED, mixed_submission, small_checkout

RUNTIME = ("grader.cli", "grader.grade", "grader.run", "grader.score", "grader.formats", "grader.plugin",
           "grader.sandbox.proxy", "grader.sandbox.spawn", "grader.sandbox.worker", "grader.sandbox.guard",
           "grader.sandbox.isolation", "grader.sandbox.wire",
           "grader.sandbox.undumpable", "grader.logtail")
# Python's own POSIX/Linux-only modules (absent on Windows): blocked so that importing them fails.
POSIX_ONLY = ("fcntl", "resource", "termios", "pwd", "grp")


def test_the_runtime_imports_without_posix_only_modules_and_reports_no_sandbox():
    blocked = "; ".join(f"sys.modules[{name!r}] = None" for name in POSIX_ONLY)
    code = (f"import sys; {blocked}\n"
            + "\n".join(f"import {module}" for module in RUNTIME)
            + "\nsys.platform = 'darwin'  # after the imports: the standard library itself is this Linux one"
            + "\nfrom grader.sandbox.isolation import describe, level\nprint(level(), '|', describe())")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-2000:]
    chosen, text = result.stdout.strip().split(" | ")
    assert chosen == "none" and "no sandbox" in text


def test_the_unsandboxed_path_grades_exactly(tmp_path):
    """macOS's path: no sandbox, the worker a plain child process. One submission that passes some tests of a
    one-file suite and fails another (tests/tooling/small_checkout.py) earns exactly its points: a pass and a
    fail kept, in one cold start (as the environment matrix grades, test_environments.py)."""
    checkout = small_checkout(tmp_path / "lab03")
    (tmp_path / "cy").mkdir()
    (tmp_path / "cy" / "attention.py").write_text(mixed_submission())
    out = tmp_path / "cy.json"
    result = subprocess.run([sys.executable, "-m", "grader", "grade", "--impl", str(tmp_path / "cy"), "--suite",
                             "public", "--format", "json", "--output", str(out), "--exit-zero", "--verbose"],
                            cwd=tmp_path, capture_output=True, text=True,
                            env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin", "GRADER_SANDBOX": "off"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "no sandbox" in result.stderr
    assert json.loads(out.read_text())["score"] == SMALL_MIXED


def test_a_process_without_a_pid_has_no_run_queue_reading_so_timeouts_count_wall_time():
    from grader.sandbox.clock import charged, tree_waits

    class NoPid:
        pid = None

    assert tree_waits(NoPid()) is None
    assert charged(4.0, None, None) == 4.0
