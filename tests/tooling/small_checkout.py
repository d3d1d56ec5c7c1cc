"""A copy of the grader whose suite is one public test file, for the tests that show the grader starts and
grades exactly under some setting (a TMPDIR, a path, a ulimit): the setting acts on starting pytest and the
worker, not on which tests run, so a suite of 3 tests shows it as well as the 40 of tests/public, in a few
seconds instead of a minute per setting."""

import shutil
from pathlib import Path

from grader.paths import REPO

# tests/public/test_scores.py: three tests and 5 points, calling the submission through the worker and its meters
SMALL_SUITE = ("public/__init__.py", "public/test_scores.py")
SMALL_FULL, SMALL_ZERO = 5.0, 0.0
# The reference with an explicit scale ignored: of the small suite it passes the tests of scale=None (2 + 1 points)
# and fails the one of an explicit scale (2 points), so one grade shows a setting keeps both a pass and a fail.
SMALL_MIXED = 3.0
IGNORED_SCALE = ("    if scale is None:\n        scale = 1.0 / math.sqrt(max(q.size(-1), 1))",
                 "    scale = 1.0 / math.sqrt(max(q.size(-1), 1))")


def mixed_submission() -> str:
    """The reference whose attention_scores ignores an explicit scale (SMALL_MIXED points of the small suite)."""
    source = (REPO / "solutions" / "attention.py").read_text()
    assert IGNORED_SCALE[0] in source, "the reference's scale line changed: update IGNORED_SCALE"
    return source.replace(*IGNORED_SCALE)


NO_CACHE = shutil.ignore_patterns("__pycache__")


def small_tests(dest: Path, files: tuple[str, ...] = SMALL_SUITE) -> Path:
    """dest with the graded suites' conftest and support, and the test files named by files (paths under tests/;
    by default tests/public holding only test_scores.py)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("__init__.py", "conftest.py"):
        shutil.copy(REPO / "tests" / name, dest / name)
    shutil.copytree(REPO / "tests" / "support", dest / "support", ignore=NO_CACHE)
    for relative in files:
        (dest / relative).parent.mkdir(exist_ok=True)
        shutil.copy(REPO / "tests" / relative, dest / relative)
    return dest


def task_files(tasks: tuple[str, ...], suites: tuple[str, ...] = ("public",)) -> tuple[str, ...]:
    """The test files of tasks in suites, for small_tests: the tests that read only some tasks' scores are graded
    on those files alone, where a slow or crashing submission would cost a timeout or a worker restart in every
    other file too. (Graded one suite at a time: a grade of every suite checks that their points add up to the
    lab's.)"""
    return tuple(f"{suite}/{file}" for suite in suites for file in ("__init__.py", *(f"test_{t}.py" for t in tasks)))


def small_checkout(dest: Path, instructor: bool = False) -> Path:
    """dest holding grader/ and lab/ (and instructor/ if asked) with small_tests as its tests/: PYTHONPATH=dest runs a
    grader whose whole suite is the small one."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO / "grader", dest / "grader", ignore=NO_CACHE)
    shutil.copytree(REPO / "lab", dest / "lab", ignore=NO_CACHE)  # the lab grader/ reads
    if instructor:
        shutil.copytree(REPO / "instructor", dest / "instructor", ignore=NO_CACHE)
    small_tests(dest / "tests")
    return dest
