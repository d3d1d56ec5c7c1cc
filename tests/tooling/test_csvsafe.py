"""csvsafe: text a spreadsheet would run as a formula is quoted; numbers are left alone; reading undoes it."""

import io

import pytest

from instructor import csvsafe


@pytest.mark.parametrize("cell", ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "\t=1", "\r=1", '=HYPERLINK("x","y")'])
def test_a_cell_a_spreadsheet_would_run_is_quoted_and_read_back_as_written(cell):
    assert csvsafe.neutralize(cell) == "'" + cell
    assert csvsafe.original(csvsafe.neutralize(cell)) == cell


@pytest.mark.parametrize("cell", ["42.5", "-1", "+3", "0.0", "ada", "", "it's", "'quoted"])
def test_numbers_and_plain_text_are_written_unchanged(cell):
    assert csvsafe.neutralize(cell) == cell and csvsafe.original(cell) == cell


def test_the_writer_neutralizes_every_cell_but_keeps_numbers():
    handle = io.StringIO()
    csvsafe.writer(handle).writerows([["=evil()", 12.5, -3, "ok"]])
    assert handle.getvalue().strip() == "'=evil(),12.5,-3,ok"


def test_the_gradebook_quotes_a_folder_name_that_is_a_formula(tmp_path):
    import csv

    from instructor.batch import error_report, write_gradebook

    name = '=HYPERLINK("http://evil.example","0")'
    write_gradebook({name: error_report(name, "public", "why")}, tmp_path / "grades.csv")
    rows = list(csv.reader(open(tmp_path / "grades.csv", newline="")))
    assert rows[1][0] == "'" + name
    assert rows[1][rows[0].index("total")] == "not graded"  # an error report: the grader failed on it


def test_the_similarity_pairs_quote_a_folder_name_that_is_a_formula(tmp_path):
    import csv

    from instructor.similarity import Pair, write_pairs

    write_pairs([Pair("@evil", "bob", 0.9, 0.9, 10)], tmp_path / "pairs.csv")
    assert list(csv.reader(open(tmp_path / "pairs.csv", newline="")))[1][:2] == ["'@evil", "bob"]
