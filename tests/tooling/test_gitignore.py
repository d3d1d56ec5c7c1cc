"""Nothing the instructor tools write about students can be committed by accident: .gitignore covers it."""

import subprocess

import pytest

from grader.paths import REPO

WRITTEN = ("grades.csv", "grades-reports/ada.json", "grades-class.html", "grades-class.csv",
           "grades-similarity.html", "grades-similarity.csv", "grades-feedback/ada.md", "feedback/ada.html",
           "canvas-import.csv", "week3-class.html")
SOURCES = ("instructor/feedback.py", "tests/support/feedback.py", "grader/formats/gradescope.py")


def ignored(path: str) -> bool:
    return subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", "--no-index", path]).returncode == 0


@pytest.mark.parametrize("path", WRITTEN)
def test_every_file_written_about_students_is_ignored(path):
    assert ignored(path)


@pytest.mark.parametrize("path", SOURCES)
def test_no_source_file_is_ignored(path):
    assert not ignored(path)
