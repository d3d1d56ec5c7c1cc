"""batch --deadline: each clone's last commit before its deadline is graded (an extension moves it), later
commits are listed as late, a late policy says what they count for, and no student's clone is changed."""

import csv
import json
import os
import subprocess
from datetime import datetime, timedelta

import pytest

from instructor import batch
from instructor.cli import main
from instructor.deadline import Commit, LatePolicy, choose, export, history, parse_policy, parse_time
from tests.tooling.test_batch_workflow import DIAGONAL, SCALE, fails, made_grading

DEADLINE = datetime.fromisoformat("2026-12-04T23:59:00+00:00")
HOUR, DAY = timedelta(hours=1), timedelta(days=1)


def clone(folder, commits):
    """A git repository at folder with one commit per (time, attention.py source), in that order; the times
    are the committer's, as a student's machine would write them."""
    folder.mkdir(parents=True)
    git = ["git", "-C", str(folder), "-c", "user.name=s", "-c", "user.email=s@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    for when, source in commits:
        (folder / "attention.py").write_text(source)
        subprocess.run([*git, "add", "attention.py"], check=True)
        stamp = {"GIT_AUTHOR_DATE": when.isoformat(), "GIT_COMMITTER_DATE": when.isoformat()}
        subprocess.run([*git, "commit", "-qm", "work"], check=True, env={**os.environ, **stamp})
    return folder


def shas(folder):
    return subprocess.run(["git", "-C", str(folder), "log", "--format=%H"], capture_output=True, text=True,
                          check=True).stdout.split()


@pytest.fixture
def klass(tmp_path, monkeypatch):
    """ada: on time; bob: a fix one hour late; cy: an extension of 3 days, used; dee: no git; eve: only late."""
    monkeypatch.setattr(batch, "_grade_locally", made_grading)
    root = tmp_path / "class"
    clone(root / "ada", [(DEADLINE - 2 * DAY, fails(SCALE)), (DEADLINE - HOUR, fails())])
    clone(root / "bob", [(DEADLINE - DAY, fails(SCALE, DIAGONAL)), (DEADLINE + HOUR, fails())])
    clone(root / "cy", [(DEADLINE - DAY, fails(DIAGONAL)), (DEADLINE + 2 * DAY, fails())])
    (root / "dee").mkdir()
    (root / "dee" / "attention.py").write_text(fails(SCALE))
    clone(root / "eve", [(DEADLINE + 5 * DAY, fails())])
    extensions = tmp_path / "extensions.csv"
    extensions.write_text(f"student,deadline\ncy,{(DEADLINE + 3 * DAY).isoformat()}\n")
    return root, extensions


def graded(tmp_path, root, extensions, policy):
    output = tmp_path / "grades.csv"
    assert main(["batch", str(root), "--output", str(output), "--no-sandbox", "--deadline", DEADLINE.isoformat(),
                 "--extensions", str(extensions), "--late-policy", policy]) == 0
    with open(output, newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def summary(rows, root):
    """{student: (total, which commit was graded (0 = the first), late commits, days late, penalty %)}."""
    def which(student, sha):
        return "" if not sha else list(reversed(shas(root / student))).index(sha)

    return {student: (float(row["total"]), which(student, row["commit"]), row["late_commits"], row["days_late"],
                      row["penalty_percent"]) for student, row in rows.items()}


# Worth: scale 6, shape 4, hidden 5 (scores), diagonal 10 (causal_mask): 25 in all.
def test_without_a_late_policy_late_commits_count_for_nothing(tmp_path, klass):
    rows = graded(tmp_path, *klass, "none")
    assert summary(rows, klass[0]) == {
        "ada": (25.0, 1, "0", "0", "0.0"),
        "bob": (9.0, 0, "1", "0", "0.0"),  # the on-time commit fails the diagonal (10) and the scale (6)
        "cy": (25.0, 1, "0", "0", "0.0"),  # two days late, within the extension
        "dee": (19.0, "", "", "", ""),
        "eve": (0.0, "", "1", "0", "0.0"),
    }
    assert rows["bob"]["flags"].startswith("late: 1 commit(s) after 2026-12-04T23:59:00+00:00")
    assert rows["dee"]["flags"] == "no git history: graded as found, the deadline not checked"
    assert rows["cy"]["deadline"] == (DEADLINE + 3 * DAY).isoformat() and rows["cy"]["flags"] == ""


def test_the_stored_report_names_the_clone_and_the_commit_graded(tmp_path, klass):
    root = klass[0]
    graded(tmp_path, *klass, "none")
    report = json.loads((tmp_path / "grades-reports" / "ada.json").read_text())
    assert report["impl"] == f"{root / 'ada'} at commit {shas(root / 'ada')[0]}"


def test_a_penalty_per_day_cuts_the_late_commits_total_up_to_its_last_day(tmp_path, klass):
    rows = graded(tmp_path, *klass, "penalty:10:3")
    assert summary(rows, klass[0]) == {
        "ada": (25.0, 1, "0", "0", "0.0"),
        "bob": (22.5, 1, "1", "1", "10.0"),  # one hour late is a day late: 25 - 10%
        "cy": (25.0, 1, "0", "0", "0.0"),
        "dee": (19.0, "", "", "", ""),
        "eve": (0.0, "", "1", "0", "0.0"),  # five days late, past the three the policy takes
    }
    assert rows["bob"]["scores"] == "15.0"  # the task columns keep what the code earned


def test_grade_late_grades_the_newest_commit_in_full_and_records_its_lateness(tmp_path, klass):
    rows = graded(tmp_path, *klass, "grade-late")
    assert summary(rows, klass[0])["eve"] == (25.0, 0, "1", "5", "0.0")
    assert summary(rows, klass[0])["bob"] == (25.0, 1, "1", "1", "0.0")
    assert rows["eve"]["flags"].endswith(", 5 day(s) late")


def test_an_extension_for_a_student_without_a_folder_is_named_on_stderr(tmp_path, klass, capsys):
    root, extensions = klass
    extensions.write_text("student,deadline\ncy,2026-12-07T23:59Z\nbobb,2026-12-07T23:59Z\n")
    graded(tmp_path, root, extensions, "none")
    assert "--extensions names 1 student(s) with no folder" in capsys.readouterr().err


def test_no_students_clone_is_changed(tmp_path, klass):
    root = klass[0]
    before = {student: (shas(root / student), (root / student / "attention.py").read_text()) for student in
              ("ada", "bob", "cy", "eve")}
    graded(tmp_path, *klass, "none")
    for student, (commits, text) in before.items():
        assert shas(root / student) == commits and (root / student / "attention.py").read_text() == text
        status = subprocess.run(["git", "-C", str(root / student), "status", "--porcelain"], capture_output=True,
                                text=True, check=True).stdout
        assert status == ""


def test_the_last_commit_by_date_before_the_deadline_is_chosen_whatever_the_log_order():
    commits = [Commit("c", DEADLINE + HOUR), Commit("a", DEADLINE - DAY), Commit("b", DEADLINE - HOUR)]
    checkout = choose(commits, DEADLINE, LatePolicy("none"))
    assert checkout.graded == commits[2] and checkout.late == (commits[0],)


def test_the_penalty_never_exceeds_the_whole_total():
    checkout = choose([Commit("a", DEADLINE + 30 * DAY)], DEADLINE, parse_policy("penalty:10"))
    assert (checkout.days_late, checkout.penalty_percent, checkout.penalized(25.0)) == (30, 100.0, 0.0)


def test_export_copies_only_the_chosen_commits_attention_py(tmp_path):
    folder = clone(tmp_path / "ada", [(DEADLINE - DAY, "first\n"), (DEADLINE, "second\n")])
    (folder / "notes.txt").write_text("not graded")
    first = history(folder)[-1]
    dest = export(folder, first, tmp_path / "out")
    assert [p.name for p in dest.rglob("*")] == ["attention.py"]
    assert (dest / "attention.py").read_text() == "first\n"


@pytest.mark.parametrize("text", ["soon", "2026-12-04T23:59:00", "2026-13-04T23:59Z"])
def test_a_deadline_without_its_offset_or_not_a_time_is_refused_in_one_line(text):
    with pytest.raises(ValueError, match="^--deadline") as error:
        parse_time(text)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("text", ["penalty", "penalty:0", "penalty:150", "penalty:10:x", "late"])
def test_a_late_policy_that_is_none_of_the_forms_is_refused_in_one_line(text):
    with pytest.raises(ValueError, match="none, penalty:PCT_PER_DAY.*grade-late"):
        parse_policy(text)


def test_extensions_without_a_deadline_are_refused_before_grading(tmp_path, capsys):
    (tmp_path / "class" / "ada").mkdir(parents=True)
    assert main(["batch", str(tmp_path / "class"), "--output", str(tmp_path / "g.csv"), "--extensions", "x.csv"]) == 2
    assert capsys.readouterr().err.strip().endswith("--extensions: give --deadline ISO-TIME too (the class's deadline)")


def test_an_extensions_file_with_a_bad_time_names_its_line(tmp_path, capsys):
    (tmp_path / "class" / "ada").mkdir(parents=True)
    (tmp_path / "ext.csv").write_text("student,deadline\nada,2026-12-05T10:00Z\nbob,tomorrow\n")
    assert main(["batch", str(tmp_path / "class"), "--output", str(tmp_path / "g.csv"), "--deadline",
                 DEADLINE.isoformat(), "--extensions", str(tmp_path / "ext.csv")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "line 3" in error and "'tomorrow'" in error
