"""The twin start (grader.sandbox.twin): a grade of one submission forks its worker from the new Python that then
becomes its pytest child, after one import of torch. What the worker holds of that Python is asked from inside
it: a one-test suite whose test writes down what the student's function saw."""

import json
import textwrap

import pytest

from grader.grade import grade
from grader.launch import PLAIN
from grader.sandbox import isolation as sandbox
from tests.tooling.small_checkout import small_tests

pytestmark = pytest.mark.skipif(sandbox.level() != "namespaces", reason="needs root and namespaces (CI has both)")

# Behind the syntax scan (it refuses sys.modules): what a worker could read of what it inherited.
PROBE = textwrap.dedent('''
    import json, os, stat, sys

    def read(path):
        try:
            with open(path, "rb") as handle:
                return handle.read().decode(errors="replace")
        except OSError as error:  # the worker is not dumpable: /proc/self is root's
            return type(error).__name__

    def open_descriptors():
        kinds = {}
        for fd in range(1024):
            try:
                mode = os.fstat(fd).st_mode
            except OSError:
                continue
            kinds[str(fd)] = "pipe" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "other"
        return kinds

    def inside():
        modules = sorted(name for name in sys.modules if name.split(".")[0] in ("pytest", "_pytest", "pluggy", "tests"))
        return json.dumps({"environ": dict(os.environ), "initial": read("/proc/self/environ"), "argv": sys.argv,
                           "descriptors": open_descriptors(), "modules": modules})
''')

TEST_FILE = '''
from pathlib import Path

import pytest

pytestmark = pytest.mark.task("scores")


@pytest.mark.points(1)
def test_what_the_worker_holds(submission):
    Path({out!r}).write_text(submission.inside())
'''


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    """What the probe saw inside a worker of a twin start, with a marker in the grading process's environment."""
    root = tmp_path_factory.mktemp("twin")
    (root / "probe").mkdir()
    (root / "probe" / "attention.py").write_text(PROBE)
    tests = small_tests(root / "tests", ("public/__init__.py",))
    out = root / "seen.json"
    (tests / "public" / "test_probe.py").write_text(TEST_FILE.format(out=str(out)))
    assert not PLAIN.worker_before_pytest, "the twin start is the default where the level allows it"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADER_TWIN_MARKER", "marker-of-the-graders-environment")
        report = grade(root / "probe", "public", tests_dir=tests, partial=True, syntax_scan=lambda source: [])
    assert report.score == report.max_score == 1, report.tests[0].message if report.tests else report.flags
    return {**json.loads(out.read_text()), "tests": str(tests)}


def test_the_worker_sees_only_its_own_allow_listed_environment(seen):
    assert set(seen["environ"]) <= {"LANG", "LC_ALL", "LC_CTYPE", "TZ", "OMP_NUM_THREADS", "PYTHONDONTWRITEBYTECODE",
                                    "PATH", "HOME", "TMPDIR"}


def test_the_environment_the_worker_inherited_in_memory_holds_nothing_of_the_graders(seen):
    """The twin started with the worker's environment: the first environment of its process, which the fork
    copied, is the allow-list too (and unreadable here: the worker is not dumpable)."""
    assert "marker-of-the-graders-environment" not in seen["initial"]
    assert "GRADER_" not in seen["initial"] and "PYTHONPATH" not in seen["initial"]


def test_the_command_line_the_worker_inherited_is_the_inits_not_pytests(seen):
    """The twin's: its script, the init's configuration (as a plain start's init is given it), two numbers."""
    script, config, *numbers = seen["argv"]
    assert script.endswith("twin_script.py") and json.loads(config)["level"] == "namespaces"
    assert [number.isdigit() for number in numbers] == [True, True]
    assert seen["tests"] not in " ".join(seen["argv"])


def test_the_worker_holds_no_pipe_of_the_pytest_child(seen):
    """The key, the report channel and the control pipe are pipes: the worker closed them before anything ran."""
    assert "pipe" not in seen["descriptors"].values(), seen["descriptors"]
    assert list(seen["descriptors"].values()).count("socket") == 1, seen["descriptors"]


def test_no_module_of_pytest_or_of_the_suites_is_in_the_workers_memory(seen):
    assert seen["modules"] == []
