"""What batch writes around the grading itself: the class report, regrading some students into the gradebook,
grading each student's last commit before a deadline. Grading is stood in for by made reports (each
attention.py names the tests it fails), so the tests run in a second and state the gradebook they expect."""

import stat

import pytest

from grader.paths import find_impl
from instructor import batch
from tests.tooling import made_reports

SCALE = "tests/public/test_scores.py::test_scale"
DIAGONAL = "tests/public/test_causal_mask.py::test_diagonal"


def fails(*test_ids: str) -> str:
    """An attention.py the stand-in grading fails on test_ids."""
    return "".join(f"# fails {test_id}\n" for test_id in test_ids) + "def attention_scores(q, k): ...\n"


def made_grading(root, folders, suite, jobs, timeout, tests_dir, record, *_):
    for folder in folders:
        impl = find_impl(folder)
        if impl is None:
            record(folder.name, made_reports.missing())
            continue
        failed = {line.split()[2]: "wrong" for line in impl.read_text().splitlines() if line.startswith("# fails ")}
        record(folder.name, made_reports.report(failed, impl=str(impl)))


@pytest.fixture
def stand_in(monkeypatch):
    monkeypatch.setattr(batch, "_grade_locally", made_grading)


def a_class(root, sources):
    for student, source in sources.items():
        (root / student).mkdir(parents=True)
        if source is not None:
            (root / student / "attention.py").write_text(source)
    return root


def test_batch_writes_the_class_report_beside_the_gradebook(tmp_path, stand_in):
    root = a_class(tmp_path / "class", {"ada": fails(), "bob": fails(SCALE), "cy": None})
    batch.run_batch(root, output=tmp_path / "grades.csv", progress=False, no_sandbox=True)
    for name in ("grades-class.html", "grades-class.csv"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
    assert "test_scale" in (tmp_path / "grades-class.html").read_text()


def rows_by_student(path):
    return {line.split(",", 1)[0]: line for line in path.read_text().splitlines(keepends=True)}


@pytest.mark.parametrize("roster", [False, True], ids=["plain", "with-roster"])
def test_regrading_some_students_keeps_every_other_row_byte_for_byte(tmp_path, stand_in, roster):
    root = a_class(tmp_path / "class", {"ada": fails(), "bob": fails(SCALE), "=cy": fails(DIAGONAL), "dee": None})
    output = tmp_path / "grades.csv"
    roster_csv = tmp_path / "roster.csv"
    roster_csv.write_text("identifier,github_username,github_id,name\nada@uni,ada,1,\nbob@uni,bob,2,\n")
    options = dict(output=output, progress=False, no_sandbox=True, roster=roster_csv if roster else None)
    batch.run_batch(root, **options)
    before = rows_by_student(output)
    (root / "bob" / "attention.py").write_text(fails())
    (root / "ada" / "attention.py").write_text(fails(SCALE, DIAGONAL))  # changed, but not regraded
    batch.run_batch(root, only={"bob"}, **options)
    after = rows_by_student(output)
    assert after.keys() == before.keys()
    assert {student for student in after if after[student] != before[student]} == {"bob"}
    assert after["bob"].split(",")[1:4] == (["bob@uni", "bob", "15.0"] if roster else ["15.0", "10.0", "0.0"])


def test_only_names_an_unknown_student_in_one_line_and_grades_nobody(tmp_path, capsys):
    from instructor.cli import main

    root = a_class(tmp_path / "class", {"ada": fails()})
    assert main(["batch", str(root), "--output", str(tmp_path / "grades.csv"), "--only", "ada", "zed"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "--only zed: no such student folder" in error
    assert not (tmp_path / "grades.csv").exists()
