"""What the docs say about the outputs matches what the renderers do: Classroom gets one entry per point,
Gradescope's score includes the bonus (120 at most), and pytest-json-report's omissions are named."""

import json
import re

from grader.formats import RENDERERS
from grader.paths import REPO
from grader.report import Status, TestResult, make_report
from grader.run import JSON_REPORT
from grader.tasks import CORE_POINTS, TASKS

DOCS = {name: " ".join((REPO / name).read_text().split()) for name in ("docs/grading.md", "docs/instructors.md")}


def result(task, name, points, status=Status.PASSED, suite="public"):
    return TestResult(id=f"tests/{suite}/test_{task}.py::{name}", name=name, task=task, suite=suite, status=status,
                      message="" if status is Status.PASSED else "wrong", score=points if status is Status.PASSED
                      else 0.0, max_score=points)


def test_classroom_gets_one_entry_per_point_and_the_docs_say_so():
    report = make_report([result("scores", "a", 2.0), result("scores", "b", 3.0, Status.FAILED),
                          result("tiled", "c", 2.0)], [], "public", "x")
    entries = json.loads(RENDERERS["classroom"](report))["tests"]
    assert len(entries) == 5, "one entry per point of each core test; the bonus test is left out"
    assert sum(entry["score"] for entry in entries) == report.score == 2.0
    for text in DOCS.values():
        assert "one entry per point" in text.replace("**", "")
        assert not re.search(r"one entry per task", text)


def test_the_gradescope_score_includes_the_bonus_and_the_docs_say_120():
    bonus = sum(task.points for task in TASKS if task.bonus)
    report = make_report([result(task.id, "t", float(task.points)) for task in TASKS], [], "public", "x")
    results = json.loads(RENDERERS["gradescope"](report))
    assert results["score"] == CORE_POINTS + bonus == 120
    assert results["extra_data"]["max_score"] == CORE_POINTS
    for text in DOCS.values():
        assert "includes the bonus" in text.replace("**", "") and "120" in text


def test_the_docs_name_every_key_pytest_json_report_leaves_out():
    omitted = JSON_REPORT[JSON_REPORT.index("--json-report-omit") + 1:]
    assert {"collectors", "keywords"} <= set(omitted)
    section = DOCS["docs/grading.md"].split("- `pytest-json`:")[1].split("- `")[0]
    for key in omitted:
        assert f"`{key}`" in section or key in section, f"docs/grading.md does not say pytest-json omits {key}"
