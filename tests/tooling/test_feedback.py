"""Feedback pages: what `make test` shows, the hidden tests as far as the instructor chooses, no path of the
staff's machine, no flag meant for the staff; the command renders any stored report."""

import json
import re
import stat
from pathlib import Path

import pytest

from grader.report import Flag, FlagKind
from instructor.cli import main
from instructor.feedback import make_feedback, render_html, render_markdown, scrub, write_pages
from tests.tooling import made_reports

SCALE = "tests/public/test_scores.py::test_scale"
HIDDEN = "tests/hidden/test_scores.py::test_large"
HOME = str(Path.home())
TRACEBACK = (f'Traceback:\n  File "/home/ta/lab03/class/ada/attention.py", line 3, in attention_scores\n'
             f"ZeroDivisionError (see {HOME}/notes.txt and /tmp/batch-commits-x1/ada/attention.py)")
ABSOLUTE = re.compile(r"(?<![\w.])(/|~/|[A-Za-z]:\\)[\w.-]+[/\\]")


def a_report(flags=()):
    return made_reports.report({SCALE: TRACEBACK, HIDDEN: "the secret edge case: q of length 0"},
                               flags=tuple(flags), impl="/home/ta/lab03/class/ada")


def pages(report, hidden):
    feedback = make_feedback("ada", report, hidden)
    return render_markdown(feedback, report), render_html(feedback, report)


@pytest.mark.parametrize("hidden", ["none", "summary", "full"])
def test_no_page_holds_an_absolute_path_or_the_staff_home(hidden):
    for page in pages(a_report(), hidden):
        assert not ABSOLUTE.search(page), ABSOLUTE.search(page)
        assert HOME not in page and "/home/" not in page and "batch-commits" not in page
        assert 'File "attention.py", line 3' in page.replace("&quot;", '"')


def test_scrub_cuts_posix_windows_and_home_paths_to_their_file_name():
    assert scrub(r"at /srv/x/attention.py, C:\Users\ta\a.py and ~/lab/b.py") == "at attention.py, a.py and b.py"


def test_hidden_none_shows_the_public_tests_only():
    markdown, _ = pages(a_report(), "none")
    assert "test_scale" in markdown and "Hidden tests" not in markdown and "secret edge case" not in markdown


def test_hidden_summary_shows_each_tasks_hidden_points_without_names_or_messages():
    markdown, html = pages(a_report(), "summary")
    assert "| Attention scores | 0 / 5 | 0 of 1 |" in markdown
    assert "test_large" not in markdown + html and "secret edge case" not in markdown + html


def test_hidden_full_shows_the_hidden_tests_as_the_public_ones():
    markdown, _ = pages(a_report(), "full")
    assert "test_large" in markdown and "secret edge case" in markdown


def test_the_total_counts_every_suite_whatever_is_shown():
    markdown, _ = pages(a_report(), "none")
    assert "**Total: 14 / 25** (public and hidden tests)" in markdown


def test_flags_for_the_staff_stay_out_and_lateness_stays_in():
    flags = [Flag(FlagKind.SIMILAR, "bob (93%)"), Flag(FlagKind.TAMPERING, "2 unsigned lines"),
             Flag.from_json("late: 1 commit(s) after 2026-12-04T23:59:00+00:00: abc (x); graded abc")]
    markdown, html = pages(a_report(flags), "summary")
    assert "bob" not in markdown + html and "unsigned" not in markdown + html
    assert "late: 1 commit" in html
    assert "(public and hidden tests, before any late penalty: see the notes)" in markdown


def test_student_text_is_escaped_in_the_html_page():
    report = made_reports.report({SCALE: "<script>alert(1)</script>"})
    assert "<script>" not in render_html(make_feedback("<b>x</b>", report), report)


def test_a_message_with_a_code_fence_stays_inside_the_markdown_block():
    report = made_reports.report({SCALE: "```\n# escaped"})
    markdown = render_markdown(make_feedback("ada", report), report)
    assert "````text" in markdown and markdown.count("````") == 2


def test_pages_are_written_for_each_student_readable_by_the_owner_only(tmp_path):
    written = write_pages({"ada": a_report(), "bob": made_reports.report()}, tmp_path / "feedback", "summary")
    assert sorted(path.name for path in written) == ["ada.html", "ada.md", "bob.html", "bob.md"]
    assert {stat.S_IMODE(path.stat().st_mode) for path in written} == {0o600}
    assert stat.S_IMODE((tmp_path / "feedback").stat().st_mode) == 0o700


def test_the_command_renders_one_stored_report_for_a_ta(tmp_path, capsys):
    stored = tmp_path / "ada.json"
    stored.write_text(json.dumps(a_report().to_json()))
    assert main(["feedback", str(stored), "--hidden", "none", "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "ada.md").read_text().startswith("# Lab 03 feedback: ada")


def test_the_command_names_a_missing_report_in_one_line(tmp_path, capsys):
    assert main(["feedback", str(tmp_path / "nobody.json")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "nobody.json: no such file or folder" in error
