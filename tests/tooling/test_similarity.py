"""batch --similarity: copydetect finds the copied pair, ignores the shared stubs, and only flags."""

import csv
import os
import stat

import pytest

from grader.paths import REPO
from grader.report import FlagKind
from instructor import batch, similarity
from instructor.batch import error_report

REFERENCE = (REPO / "solutions" / "attention.py").read_text()
STUBS = (REPO / "assignment" / "attention.py").read_text()


def class_of(tmp_path, sources):
    files = {}
    for student, text in sources.items():
        path = tmp_path / student / "attention.py"
        path.parent.mkdir()
        path.write_text(text)
        files[student] = path
    return files


def renamed(text):
    return text.replace("scores", "logits").replace("weights", "probs")


def test_a_copied_file_is_the_most_similar_pair_and_is_flagged(tmp_path):
    files = class_of(tmp_path, {"ada": REFERENCE, "bob": renamed(REFERENCE), "cy": STUBS})
    pairs = similarity.compare(files, tmp_path / "report.html")
    assert {pairs[0].first, pairs[0].second} == {"ada", "bob"}
    assert pairs[0].similarity > similarity.FLAG_THRESHOLD
    flagged = similarity.flags(pairs)
    assert set(flagged) == {"ada", "bob"}
    assert flagged["ada"][0].kind is FlagKind.SIMILAR and flagged["ada"][0].text.startswith("bob (")
    assert (tmp_path / "report.html").read_text().count("<html") == 1


def test_the_shared_stubs_alone_do_not_make_students_similar(tmp_path):
    files = class_of(tmp_path, {"ada": STUBS, "bob": STUBS})
    assert similarity.flags(similarity.compare(files, tmp_path / "report.html")) == {}


def test_the_pairs_csv_lists_shares_and_overlap(tmp_path):
    pair = similarity.Pair("ada", "bob", 0.91, 0.88, 420)
    similarity.write_pairs([pair], tmp_path / "pairs.csv")
    rows = list(csv.reader(open(tmp_path / "pairs.csv")))
    assert rows[1] == ["ada", "bob", "0.910", "0.880", "420"]


def test_one_student_is_no_comparison(tmp_path):
    files = class_of(tmp_path, {"ada": REFERENCE})
    assert similarity.compare(files, tmp_path / "report.html") == []


EVIL = "evil<img src=x onerror=alert(1)>"


def test_student_folder_names_are_escaped_in_the_html_report(tmp_path):
    files = class_of(tmp_path, {"ada": REFERENCE, "bob": renamed(REFERENCE)})
    files[EVIL] = files.pop("bob")
    pairs = similarity.compare(files, tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    assert EVIL in {pairs[0].first, pairs[0].second}
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_the_html_report_opens_offline_with_no_script_and_no_outside_resource(tmp_path):
    files = class_of(tmp_path, {"ada": REFERENCE, "bob": renamed(REFERENCE)})
    similarity.compare(files, tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text().lower()
    assert "<script" not in page and "<link" not in page and "http://" not in page and "https://" not in page
    assert "highlight-red" in page  # the copied code is shown, highlighted


def test_a_file_over_the_size_cap_is_listed_not_compared(tmp_path):
    huge = REFERENCE + "\n" + "# padding\n" * 30_000
    files = class_of(tmp_path, {"ada": REFERENCE, "bob": renamed(REFERENCE), "cy": huge})
    pairs = similarity.compare(files, tmp_path / "report.html")
    assert "cy" not in {name for pair in pairs for name in (pair.first, pair.second)}
    assert "<li>cy: " in (tmp_path / "report.html").read_text()
    assert "bytes, over 200 KB" in (tmp_path / "report.html").read_text()


def test_a_comparison_over_its_time_limit_stops_with_one_clear_error(tmp_path):
    files = class_of(tmp_path, {"ada": REFERENCE, "bob": renamed(REFERENCE)})
    with pytest.raises(similarity.SimilarityTimeout, match="took over 0.01 s"):
        similarity.compare(files, tmp_path / "report.html", time_limit=0.01)


def test_the_reports_are_readable_by_their_owner_only(tmp_path):
    files = class_of(tmp_path, {"ada": REFERENCE, "bob": renamed(REFERENCE)})
    (tmp_path / "grades-similarity.csv").write_text("old")
    os.chmod(tmp_path / "grades-similarity.csv", 0o644)
    reports = {name: error_report(name, "public", "x") for name in files}
    similarity.flag_class(files, reports, tmp_path / "grades.csv")
    for name in ("grades-similarity.html", "grades-similarity.csv"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name
    assert reports["ada"].flags[-1].kind is FlagKind.SIMILAR


def test_batch_writes_the_gradebook_before_the_similarity_check_and_then_adds_its_flags(tmp_path, monkeypatch):
    root = tmp_path / "class"
    class_of(root.mkdir() or root, {"ada": REFERENCE, "bob": renamed(REFERENCE)})
    output = tmp_path / "grades.csv"

    def grade_nobody(root, folders, suite, jobs, timeout, tests_dir, record, *_):
        for folder in folders:
            record(folder.name, error_report(folder.name, suite, "not graded in this test"))

    seen = []
    real_compare = similarity.compare

    def compare_after_the_gradebook(files, html_path, **options):
        seen.append(output.read_text())
        return real_compare(files, html_path, **options)

    monkeypatch.setattr(batch, "_grade_locally", grade_nobody)
    monkeypatch.setattr(similarity, "compare", compare_after_the_gradebook)
    batch.run_batch(root, "public", output=str(output), progress=False, no_sandbox=True, similarity=True)
    assert seen and "ada" in seen[0] and "similar-to" not in seen[0]
    assert "similar-to: bob" in output.read_text()


def a_pair(first, second, share, code="x = 1\n"):
    return similarity.Pair(first, second, share, share, 100, code, code)


def test_a_file_that_is_not_utf8_is_listed_with_the_reason_not_compared(tmp_path):
    files = class_of(tmp_path, {"ada": REFERENCE, "bob": renamed(REFERENCE)})
    latin = tmp_path / "cy" / "attention.py"
    latin.parent.mkdir()
    latin.write_bytes("# caf\xe9\n".encode("latin-1") + REFERENCE.encode())
    files["cy"] = latin
    pairs = similarity.compare(files, tmp_path / "report.html")
    assert "cy" not in {name for pair in pairs for name in (pair.first, pair.second)}
    assert "<li>cy: not UTF-8 text (byte 5" in (tmp_path / "report.html").read_text()


def test_near_identical_students_form_one_cluster():
    pairs = [a_pair("ada", "bob", 0.97), a_pair("bob", "cy", 0.95), a_pair("ada", "cy", 0.94),
             a_pair("dee", "eve", 0.60)]
    assert similarity.clusters(pairs) == [["ada", "bob", "cy"]]


def test_each_student_has_one_row_with_their_closest_match():
    pairs = [a_pair("ada", "bob", 0.97), a_pair("bob", "cy", 0.50)]
    rows = similarity.closest(pairs, ["ada", "bob", "cy", "dee"], similarity.clusters(pairs))
    assert [(row.student, row.other, row.similarity, row.cluster) for row in rows] == [
        ("ada", "bob", 0.97, 1), ("bob", "ada", 0.97, 1), ("cy", "bob", 0.50, 0), ("dee", "", 0.0, 0)]


def test_a_cluster_is_shown_side_by_side_once():
    pairs = [a_pair("ada", "bob", 0.97), a_pair("bob", "cy", 0.95), a_pair("dee", "eve", 0.60)]
    shown = similarity.shown_pairs(pairs, similarity.clusters(pairs))
    assert [(pair.first, pair.second) for pair in shown] == [("ada", "bob"), ("dee", "eve")]


def test_a_student_in_a_cluster_gets_one_flag_naming_the_closest_and_counting_the_rest():
    pairs = [a_pair("ada", "bob", 0.97), a_pair("ada", "cy", 0.95), a_pair("bob", "cy", 0.90)]
    flagged = similarity.flags(pairs)
    assert [flag.text for flag in flagged["ada"]] == ["bob (97%) and 1 other(s)"]


def test_the_page_stays_bounded_for_a_class_of_copies():
    students = [f"s{i:03}" for i in range(300)]
    code = "<span class='highlight-red'>" + "y = x * 2\n" * 20_000 + "</span>"
    pairs = [a_pair(students[i], students[j], 0.5 + (i * 300 + j) / 1e6, code)
             for i in range(0, 300, 5) for j in range(i + 1, 300, 7)]
    page = similarity.render_html(pairs, {}, students)
    assert len(pairs) > similarity.MAX_TABLE_PAIRS
    assert len(page) < 2 * similarity.MAX_SIDE_BY_SIDE * (similarity.MAX_CODE_CHARS + 500) + 300_000
    assert page.count("<pre>") == 2 * similarity.MAX_SIDE_BY_SIDE
    assert page.count("<span") == page.count("</span>")
