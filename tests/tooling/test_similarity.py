"""batch --similarity: copydetect finds the copied pair, ignores the shared stubs, and only flags."""

import csv

from grader.paths import REPO
from grader.report import FlagKind
from instructor import similarity

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
