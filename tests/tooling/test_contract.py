"""No unstated contract: the tests and the given helpers read only the attributes the handout names
(w_q, w_k, w_v, w_o of MultiHeadAttention), so a correct module that names the rest its own way gets
full marks."""

import re

from grader.grade import grade
from grader.paths import SOLUTION_FILE

RENAMES = {"self.n_heads": "self._heads", "self.d_model": "self._width"}


def renamed_reference() -> str:
    """The reference with MultiHeadAttention's own attributes renamed (its projections keep their names)."""
    text = SOLUTION_FILE.read_text()
    for old, new in RENAMES.items():
        assert old in text, f"the reference no longer uses {old}: update RENAMES"
        text = text.replace(old, new)
    assert not re.search(r"\.n_heads\b", text), "something still reads an attribute called n_heads"
    return text


def test_a_correct_module_with_other_attribute_names_gets_full_marks(tmp_path):
    (tmp_path / "attention.py").write_text(renamed_reference())
    report = grade(tmp_path, "all")
    failed = [f"{test.name}: {test.message[:200]}" for test in report.tests if not test.passed]
    assert report.full_marks and report.bonus_score == report.bonus_max_score, failed
