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
    assert len(rows) == 4, "Canvas's Test Student is left out of the import"
    assert unmatched.without_grade == []
    assert unmatched.not_in_canvas == ["lab03-template-stranger"]


def test_canvas_export_needs_the_roster_identifiers_first(tmp_path):
    gradebook = write(tmp_path / "grades.csv", GRADEBOOK)
    with pytest.raises(ValueError, match="--roster"):
        lms.canvas_export(gradebook, write(tmp_path / "export.csv", CANVAS), "Lab 03", tmp_path / "out.csv")


def test_a_file_that_is_not_a_canvas_export_is_refused(joined, tmp_path):
    gradebook, _ = joined
    with pytest.raises(ValueError, match="not a Canvas gradebook export"):
        lms.canvas_export(gradebook, write(tmp_path / "x.csv", ROSTER), "Lab 03", tmp_path / "out.csv")


def joined_folders(folders, usernames):
    roster = [{"identifier": f"{name}@uni.example", "github_username": name} for name in usernames]
    return lms.join_roster(folders, roster)


def test_a_folder_goes_to_the_longest_roster_username_that_ends_it():
    joined = joined_folders(["lab03-template-jo-bob", "lab03-template-bob"], ["bob", "jo-bob"])
    assert {folder: row["github_username"] for folder, row in joined.matches.items()} == {
        "lab03-template-jo-bob": "jo-bob", "lab03-template-bob": "bob"}


def test_a_username_after_a_prefix_unlike_the_class_is_refused_not_given_to_that_student():
    folders = ["lab03-template-jo-bob", "lab03-template-ada-l", "lab03-template-bgrace"]
    joined = joined_folders(folders, ["bob", "ada-l", "bgrace"])
    assert "lab03-template-jo-bob" not in joined.matches
    assert "lab03-template-jo" in joined.refused["lab03-template-jo-bob"]
    assert set(joined.matches) == {"lab03-template-ada-l", "lab03-template-bgrace"}


def test_a_folder_named_exactly_after_a_username_is_that_students():
    joined = joined_folders(["jo-bob", "lab03-template-ada-l"], ["bob", "jo-bob", "ada-l"])
    assert joined.matches["jo-bob"]["github_username"] == "jo-bob" and not joined.refused


def test_a_username_the_roster_holds_twice_is_refused_and_listed(tmp_path):
    gradebook = write(tmp_path / "grades.csv", GRADEBOOK)
    roster = write(tmp_path / "roster.csv", [*ROSTER, ["ada2@uni.example", "ADA-L", "104", "Ada Two"]])
    unmatched = lms.add_roster(gradebook, roster)
    assert read(gradebook)[1][1] == ""
    assert unmatched.refused == ["lab03-template-ada-l: the roster has 2 rows for ada-l"]


def test_two_folders_for_one_student_are_both_refused():
    joined = joined_folders(["lab03-template-bob", "lab03-template-bob-1", "bob"], ["bob", "bob-1"])
    assert set(joined.refused) == {"lab03-template-bob", "bob"}
    assert "2 folders" in joined.refused["bob"]


def test_who_is_unmatched_is_listed_one_per_line(joined):
    _, unmatched = joined
    unmatched.not_submitted.append("someone@uni.example")
    lines = unmatched.lines()
    assert lines[0].startswith("graded, but no roster row names this folder (1)")
    assert lines[1].strip() == "lab03-template-stranger"
    assert [line.strip() for line in lines[3:]] == ["alan@uni.example", "someone@uni.example"]


def test_canvas_export_refuses_an_id_on_two_rows(joined, tmp_path):
    gradebook, _ = joined
    again = ["L, Ada (again)", "9001", "S9", "x@uni.example", "CS 101", "", ""]
    export = write(tmp_path / "export.csv", [*CANVAS, again])
    with pytest.raises(ValueError, match="^--canvas .* the ID 9001 appears on more than one row"):
        lms.canvas_export(gradebook, export, "Lab 03", tmp_path / "out.csv")


def test_canvas_export_refuses_two_graded_folders_for_one_canvas_student(tmp_path):
    gradebook = write(tmp_path / "grades.csv", [
        ["student", "identifier", "github_username", "total", "max_score", "flags"],
        ["lab03-template-ada-l", "ada@uni.example", "ada-l", "100.0", "100.0", ""],
        ["lab03-ada-old", "ada@uni.example", "ada-l", "0.0", "100.0", ""],
    ])
    with pytest.raises(ValueError, match="two graded rows map to one Canvas student: L, Ada"):
        lms.canvas_export(gradebook, write(tmp_path / "export.csv", CANVAS), "Lab 03", tmp_path / "out.csv")


def test_a_name_two_canvas_students_share_is_refused_not_guessed(tmp_path):
    gradebook = write(tmp_path / "grades.csv", [
        ["student", "identifier", "github_username", "total", "max_score", "flags"],
        ["lab03-template-sam", "Sam Lee", "sam", "80.0", "100.0", ""],
    ])
    export = write(tmp_path / "export.csv", [CANVAS[0], ["Sam Lee", "1", "", "", "A", "", ""],
                                             ["Sam Lee", "2", "", "", "B", "", ""]])
    unmatched = lms.canvas_export(gradebook, export, "Lab 03", tmp_path / "out.csv")
    assert unmatched.refused == ["Sam Lee: 2 Canvas students have Student 'Sam Lee'"]
    assert [row[-1] for row in read(tmp_path / "out.csv")[1:]] == ["", ""]


def test_formula_cells_are_neutralized_in_every_csv_while_scores_stay_numbers(tmp_path):
    formula = '=HYPERLINK("http://evil.example","click")'
    gradebook = write(tmp_path / "grades.csv", [
        ["student", "scores", "total", "max_score", "flags"],
        [formula, "10.0", "100.0", "100.0", ""],
        ["lab03-template-ada-l", "4.0", "42.5", "100.0", ""],
    ])
    roster = write(tmp_path / "roster.csv", [ROSTER[0], ["@SUM(1+1)*cmd|' /C calc'!A0", "ada-l", "101", "Ada"]])
    lms.add_roster(gradebook, roster)
    rows = read(gradebook)
    assert rows[1][0] == "'" + formula and rows[1][3:6] == ["10.0", "100.0", "100.0"]
    assert rows[2][1] == "'@SUM(1+1)*cmd|' /C calc'!A0"
    export = write(tmp_path / "export.csv", [CANVAS[0], ["+cmd|calc", "9001", "S1", "@SUM(1+1)*cmd|' /C calc'!A0",
                                                         "-2+3", "", ""]])
    lms.canvas_export(gradebook, export, "Lab 03", tmp_path / "out.csv")
    out = read(tmp_path / "out.csv")
    assert out[1] == ["'+cmd|calc", "9001", "S1", "'@SUM(1+1)*cmd|' /C calc'!A0", "'-2+3", "42.5"]


def test_canvas_export_refuses_a_gradebook_with_students_not_graded(tmp_path):
    gradebook = tmp_path / "grades.csv"
    gradebook.write_text("student,total,max_score,flags,identifier\n"
                         "lab03-ada,100.0,100.0,,ada@uni.edu\nlab03-bob,not graded,,grader error: x,bob@uni.edu\n")
    canvas = tmp_path / "canvas.csv"
    canvas.write_text("Student,ID,SIS User ID,SIS Login ID,Section\nAda,1,ada@uni.edu,ada@uni.edu,A\n"
                      "Bob,2,bob@uni.edu,bob@uni.edu,A\n")
    with pytest.raises(ValueError, match="1 student.s. not graded .*lab03-bob.*--only-failed"):
        lms.canvas_export(gradebook, canvas, "Lab 03", tmp_path / "out.csv")
