"""The gradebook reaches an LMS: GitHub Classroom's roster joins it, Canvas's import format leaves it."""

import csv

import pytest

from instructor import lms

GRADEBOOK = [
    ["student", "scores", "total", "max_score", "flags"],
    ["lab03-template-ada-l", "10.0", "100.0", "100.0", ""],
    ["lab03-template-bgrace", "4.0", "42.5", "100.0", ""],
    ["lab03-template-stranger", "0.0", "0.0", "100.0", "missing: no attention.py in the submission"],
]
ROSTER = [
    ["identifier", "github_username", "github_id", "name"],
    ["ada@uni.example", "ada-l", "101", "Ada L"],
    ["grace@uni.example", "BGrace", "102", "Grace B"],
    ["alan@uni.example", "alan-t", "103", "Alan T"],
]
CANVAS = [
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 02 (4241)", "Current Score"],
    ["    Points Possible", "", "", "", "", "100", "(read only)"],
    ["L, Ada", "9001", "S1", "ada@uni.example", "CS 101", "90", "90"],
    ["B, Grace", "9002", "S2", "grace@uni.example", "CS 101", "70", "70"],
    ["Student, Test", "9003", "", "", "CS 101", "", ""],
]


def write(path, rows):
    with open(path, "w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


def read(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


@pytest.fixture
def joined(tmp_path):
    gradebook = write(tmp_path / "grades.csv", GRADEBOOK)
    unmatched = lms.add_roster(gradebook, write(tmp_path / "classroom_roster.csv", ROSTER))
    return gradebook, unmatched


def test_the_roster_adds_each_students_identifier_by_github_username(joined):
    gradebook, _ = joined
    rows = read(gradebook)
    assert rows[0][:3] == ["student", "identifier", "github_username"]
    assert [row[1] for row in rows[1:]] == ["ada@uni.example", "grace@uni.example", ""]
    assert rows[1][3:] == ["10.0", "100.0", "100.0", ""]


def test_students_missing_on_either_side_of_the_roster_are_listed(joined):
    _, unmatched = joined
    assert unmatched.without_roster_entry == ["lab03-template-stranger"]
    assert unmatched.not_submitted == ["alan@uni.example"]


def test_the_canvas_import_has_canvas_identity_columns_the_points_row_and_one_score_each(joined, tmp_path):
    gradebook, _ = joined
    output = tmp_path / "canvas-import.csv"
    unmatched = lms.canvas_export(gradebook, write(tmp_path / "export.csv", CANVAS), "Lab 03 (4242)", output)
    rows = read(output)
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 03 (4242)"]
    assert rows[1] == ["    Points Possible", "", "", "", "", "100.0"]
    assert rows[2] == ["L, Ada", "9001", "S1", "ada@uni.example", "CS 101", "100.0"]
    assert rows[3] == ["B, Grace", "9002", "S2", "grace@uni.example", "CS 101", "42.5"]
    assert rows[4][-1] == ""
    assert unmatched.without_grade == ["Student, Test"]
    assert unmatched.not_in_canvas == ["lab03-template-stranger"]


def test_canvas_export_needs_the_roster_identifiers_first(tmp_path):
    gradebook = write(tmp_path / "grades.csv", GRADEBOOK)
    with pytest.raises(ValueError, match="--roster"):
        lms.canvas_export(gradebook, write(tmp_path / "export.csv", CANVAS), "Lab 03", tmp_path / "out.csv")


def test_a_file_that_is_not_a_canvas_export_is_refused(joined, tmp_path):
    gradebook, _ = joined
    with pytest.raises(ValueError, match="not a Canvas gradebook export"):
        lms.canvas_export(gradebook, write(tmp_path / "x.csv", ROSTER), "Lab 03", tmp_path / "out.csv")
