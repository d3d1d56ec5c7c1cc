"""A submission cannot reach its classmates: their files, their processes, their grades. Honest students graded
beside attacks keep their exact grade, and get the same graded alone.

The class is tests/tooling/conftest.py's attacked class, graded once per session; `make sandbox-user` runs the
tests marked each_level again as uid 65534 (the user-namespace level)."""

import pytest

from grader.grade import grade
from grader.report import FlagKind
from grader.sandbox import isolation as sandbox
from instructor.batch import run_batch
from tests.tooling.conftest import tamper_environment
from tests.tooling.misbehaving import REFERENCE, WALKER

needs_namespaces = pytest.mark.skipif(sandbox.level() != "namespaces", reason="needs root and namespaces (CI has both)")


@pytest.mark.each_level
@pytest.mark.parametrize("name", ["honest_reference", "honest_reference_too"])
def test_honest_classmates_keep_full_marks_and_no_flag(attacked_class, name):
    assert attacked_class[name].score == attacked_class[name].max_score > 0
    assert attacked_class[name].flags == []


@pytest.mark.each_level
def test_honest_stubs_keep_zero_and_no_flag(attacked_class):
    assert attacked_class["honest_stubs"].score == 0
    assert attacked_class["honest_stubs"].flags == []


@pytest.mark.each_level
@pytest.mark.parametrize("name", ["honest_reference", "honest_stubs"])
def test_a_regrade_alone_gives_the_same_result(attacked_class, monkeypatch, name):
    tamper_environment(monkeypatch, attacked_class.root)
    alone = grade(attacked_class.root / "class" / name, "public")
    graded = attacked_class[name]
    assert alone.score == graded.score and alone.flags == graded.flags
    assert [(t.id, t.status) for t in alone.tests] == [(t.id, t.status) for t in graded.tests]


@pytest.mark.each_level
def test_a_symlink_to_a_classmates_file_is_refused(attacked_class):
    report = attacked_class["symlink_to_classmate"]
    assert report.score == 0
    assert report.flags[0].kind is FlagKind.REFUSED


@pytest.mark.each_level
def test_a_classmates_file_cannot_be_read(attacked_class):
    assert attacked_class["reads_a_classmates_file"].score == 0


@pytest.mark.each_level
def test_reading_or_signalling_other_processes_changes_nothing(attacked_class):
    assert attacked_class["reads_and_signals_other_processes"].score == 0


@needs_namespaces
def test_the_walker_finds_no_classmate_nor_last_runs_reports_in_a_batch(tmp_path):
    root = tmp_path / "class"
    for name, source in (("walker", WALKER), ("ada", REFERENCE), ("bob", REFERENCE)):
        (root / name).mkdir(parents=True)
        (root / name / "attention.py").write_text(source)
    output = tmp_path / "grades.csv"
    for _ in range(2):  # the second run could read the first one's reports and similarity page
        reports = run_batch(root, suite="public", jobs=2, output=output, progress=False, similarity=True)
        assert reports["walker"].score == 0
        assert reports["ada"].full_marks and reports["bob"].full_marks
