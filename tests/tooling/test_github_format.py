"""The Classroom workflow's GitHub surfaces: the per-task table as Markdown for $GITHUB_STEP_SUMMARY, and one
::error annotation on attention.py per failing task whose line is known."""

import pytest

from grader.formats import RENDERERS
from grader.grade import grade
from grader.paths import REPO

REFERENCE = (REPO / "solutions" / "attention.py").read_text()
WRONG_SCORES = "    return q @ k.transpose(-2, -1)  # (..., Tq, Tk)"
CAUSAL_RETURN = "    return ones.tril()"


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """The reference with attention_scores off by one and causal_mask raising."""
    folder = tmp_path_factory.mktemp("broken")
    assert WRONG_SCORES in REFERENCE and CAUSAL_RETURN in REFERENCE
    text = REFERENCE.replace(WRONG_SCORES, "    return q @ k.transpose(-2, -1) + 1").replace(
        CAUSAL_RETURN, '    raise ValueError("boom")')
    (folder / "attention.py").write_text(text)
    lines = text.splitlines()
    where = {"scores": next(i for i, line in enumerate(lines, 1) if line.startswith("def attention_scores(")),
             "causal_mask": next(i for i, line in enumerate(lines, 1) if 'raise ValueError("boom")' in line)}
    return grade(folder, "public"), where


def test_the_step_summary_is_a_markdown_table_with_every_task_and_the_total(broken):
    report, _ = broken
    text = RENDERERS["github"](report)
    assert "| task | what | points | state |" in text
    for task_id in report.tasks:
        assert f"| `{task_id}` |" in text
    causal = next(row for row in text.splitlines() if row.startswith("| `causal_mask` |"))
    assert causal.endswith("tests failed |") and "| 0 / " in causal
    assert f"| **total** | | **{report.score:g} / {report.max_score:g}** | |" in text


def test_each_failing_task_gets_one_error_annotation_at_its_line_in_attention_py(broken):
    report, where = broken
    commands = RENDERERS["github-annotations"](report).splitlines()
    by_task = {command.split("title=")[1].split("%3A")[0]: command for command in commands}
    assert set(by_task) == {"scores", "causal_mask"}, commands
    for task_id, line in where.items():
        assert by_task[task_id].startswith("::error file=") and f"attention.py,line={line}," in by_task[task_id]
    assert by_task["causal_mask"].endswith("raised ValueError on valid input: boom")
    assert all(command.count("\n") == 0 for command in commands)


def test_a_full_marks_report_has_no_annotation(reference_public):
    assert reference_public.full_marks
    assert RENDERERS["github-annotations"](reference_public) == ""
