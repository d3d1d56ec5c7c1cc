"""A grade that the grader cannot finish still leaves Classroom a result, out of the maximum a normal run
records (the public core points), not another."""

import json

import grader.grade
from grader.cli import main
from grader.formats import classroom
from grader.run import GraderError, collect_manifest, suite_paths
from grader.tasks import BY_ID


def public_core_points():
    names, tests_dir = suite_paths("public")
    manifest = collect_manifest(tests_dir, names, tests_dir.parent.parent / "solutions")
    return sum(meta.points for meta in manifest if not BY_ID[meta.task].bonus)


def test_a_grader_error_writes_an_error_result_out_of_the_public_core_points(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise GraderError("the sandbox did not start\nmore detail")

    monkeypatch.setattr(grader.grade, "grade", broken)
    result = tmp_path / "result.json"
    assert main(["grade", "--suite", "public", "--format", "classroom", "--output", str(result)]) == 2
    document = json.loads(result.read_text())
    assert document["status"] == "error" and document["max_score"] == public_core_points()
    assert [test["score"] for test in document["tests"]] == [0]
    assert document["tests"][0]["message"] == "The grader could not run: the sandbox did not start"


def test_the_fallback_document_has_every_field_the_reporter_reads():
    [entry] = json.loads(classroom.fallback(56, "why"))["tests"]
    assert set(entry) == {"name", "status", "score", "message", "test_code", "filename", "line_no", "execution_time"}
