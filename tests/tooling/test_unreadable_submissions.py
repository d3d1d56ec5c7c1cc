"""A file the scan cannot read is the student's problem, not the grader's: a report with 0 and what to change,
exit 1, in every format; never exit 2, and never "not graded" in a batch."""

import json
import subprocess
import sys

from grader.paths import REPO
from grader.report import FlagKind

DEEP_SUM = ("x = " + "1+" * 4000 + "1\n").encode()  # ast.parse raised RecursionError: was exit 2, "not graded"


def test_an_unreadable_file_gets_a_report_with_zero_and_exit_1(tmp_path):
    """The scan's own tests cover each way a file cannot be read (test_capabilities.py); this is the whole
    command on one of them."""
    (tmp_path / "attention.py").write_bytes(DEEP_SUM)
    result = subprocess.run([sys.executable, "-m", "grader", "grade", "--suite", "public", "--impl", str(tmp_path),
                             "--format", "json"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["score"] == 0 and report["flags"][0].startswith(FlagKind.REFUSED.value)
    assert "cannot be graded as it is" in report["tests"][0]["message"]


def test_a_folder_or_a_pipe_named_attention_py_is_refused_as_the_students_without_opening_it(tmp_path):
    """A folder named attention.py was read (exit 2); a named pipe blocked the grader forever."""
    import os

    from grader.grade import grade

    (tmp_path / "folder" / "attention.py").mkdir(parents=True)
    (tmp_path / "pipe").mkdir()
    os.mkfifo(tmp_path / "pipe" / "attention.py")
    for name in ("folder", "pipe"):
        report = grade(tmp_path / name, "public")
        assert report.score == 0 and report.flags[0].kind is FlagKind.REFUSED
        assert "is not a file" in report.tests[0].message


def test_a_process_collects_a_suite_once_for_the_files_that_never_run_until_the_suite_changes(tmp_path, monkeypatch):
    """A missing or refused file's report lists the suite's tests, from a collect-only pytest run: a batch of
    many such files collects once (each collection imports torch), and again when a grading file changes."""
    from grader import run
    from grader.grade import missing_report
    from tests.tooling.small_checkout import small_tests

    tests = small_tests(tmp_path / "tests")
    started = []
    start = run._start_pytest
    monkeypatch.setattr(run, "_start_pytest", lambda *args, **kwargs: started.append(1) or start(*args, **kwargs))
    first, second = (missing_report(tmp_path / name, "public", tests) for name in ("ada", "bob"))
    assert len(started) == 1 and [t.id for t in first.tests] == [t.id for t in second.tests] != []
    test_file = tests / "public" / "test_scores.py"
    test_file.write_text(test_file.read_text() + "\n# changed\n")
    missing_report(tmp_path / "cy", "public", tests)
    assert len(started) == 2
