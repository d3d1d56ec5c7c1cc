"""The class report: figures over a class's reports, an offline HTML page of bounded size and a CSV, 0600."""

import csv
import json
import re
import stat

from grader.report import Report
from instructor import classreport
from instructor.cli import main
from tests.tooling import made_reports

SCALE = "tests/public/test_scores.py::test_scale"
DIAGONAL = "tests/public/test_causal_mask.py::test_diagonal"
NO_SQRT = "scores wrong.\nLikely cause: the scores were divided by 8 (d), not by sqrt(d)"


def a_class() -> dict[str, Report]:
    return {
        "ada": made_reports.report(),
        "bob": made_reports.report({SCALE: NO_SQRT}),
        "cy": made_reports.report({SCALE: NO_SQRT.replace("8", "16"), DIAGONAL: "diagonal masked"}),
        "dee": made_reports.missing(),
        "eve": made_reports.not_graded(),
    }


def test_missing_and_not_graded_students_are_counted_apart_not_as_zeros():
    summary = classreport.summarize(a_class())
    assert (summary.students, summary.graded, summary.missing, summary.not_graded) == (5, 3, 1, 1)
    assert summary.totals == (9.0, 19.0, 25.0)


def test_each_task_has_its_mean_and_pass_rate():
    tasks = {task.id: task for task in classreport.summarize(a_class()).tasks}
    assert (tasks["scores"].mean, tasks["scores"].pass_rate) == (11.0, 1 / 3)
    assert (tasks["causal_mask"].mean, tasks["causal_mask"].pass_rate) == (20 / 3, 2 / 3)
    assert tasks["tiled"].bonus and tasks["tiled"].pass_rate == 1.0


def test_the_most_failed_test_comes_first_with_its_student_count():
    failed = classreport.summarize(a_class()).failed_tests
    assert [(test.name, test.students) for test in failed] == [(SCALE, 2), (DIAGONAL, 1)]


def test_a_likely_cause_counts_once_per_student_with_numbers_as_n():
    [cause] = classreport.summarize(a_class()).causes
    assert (cause.name, cause.task, cause.students) == ("the scores were divided by N (d), not by sqrt(d)", "scores", 2)


def test_the_page_is_one_offline_file_with_its_plots_embedded(tmp_path):
    page, _ = classreport.write(classreport.summarize(a_class()), tmp_path / "grades-class.html")
    text = page.read_text()
    assert text.count("src='data:image/png;base64,") == 2
    assert "<script" not in text and "http" not in text
    assert "the scores were divided by N (d), not by sqrt(d)" in text


def test_the_page_stays_small_for_a_large_class_with_many_causes(tmp_path):
    reports = {f"s{i:03}": made_reports.report({SCALE: f"Likely cause: mistake {chr(65 + i % 26)}{i}" + "x" * 500})
               for i in range(300)}
    page, table = classreport.write(classreport.summarize(reports), tmp_path / "grades-class.html")
    assert page.stat().st_size < 200_000
    assert len(re.findall("<tr>", page.read_text())) <= 3 * (classreport.TOP + 1) + 1
    assert all(len(row["name"]) <= classreport.CAUSE_CHARS for row in csv.DictReader(table.open()))


def test_student_text_is_escaped_in_the_page(tmp_path):
    reports = {"ada": made_reports.report({SCALE: "Likely cause: <img src=x onerror=alert(1)>"})}
    page, _ = classreport.write(classreport.summarize(reports), tmp_path / "c.html")
    assert "<img src=x" not in page.read_text()


def test_the_csv_beside_the_page_holds_every_figure(tmp_path):
    _, table = classreport.write(classreport.summarize(a_class()), tmp_path / "grades-class.html")
    rows = {(row["section"], row["name"]): row for row in csv.DictReader(table.open())}
    assert table.name == "grades-class.csv"
    assert rows[("students", "graded")]["value"] == "3"
    assert rows[("task_pass_rate", "causal_mask")]["value"] == "0.667"
    assert rows[("failed_test", SCALE)]["value"] == "2"
    assert rows[("totals", "mean")]["value"] == "17.67"


def test_both_files_are_readable_by_their_owner_only(tmp_path):
    for path in classreport.write(classreport.summarize(a_class()), tmp_path / "grades-class.html"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def stored(tmp_path, reports):
    folder = tmp_path / "grades-reports"
    folder.mkdir()
    for student, report in reports.items():
        (folder / f"{student}.json").write_text(json.dumps(report.to_json()))
    return folder


def test_the_command_reads_stored_reports_and_writes_beside_their_folder(tmp_path, capsys):
    folder = stored(tmp_path, a_class())
    assert main(["class-report", str(folder)]) == 0
    assert (tmp_path / "grades-class.html").is_file() and (tmp_path / "grades-class.csv").is_file()


def test_the_command_names_a_file_that_is_not_a_report_in_one_line(tmp_path, capsys):
    folder = stored(tmp_path, a_class())
    (folder / "zed.json").write_text("{}")
    assert main(["class-report", str(folder)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "zed.json: not a grader report" in error


def test_the_command_refuses_a_folder_without_reports_in_one_line(tmp_path, capsys):
    assert main(["class-report", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
