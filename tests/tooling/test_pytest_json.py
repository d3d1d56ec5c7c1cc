"""--format pytest-json: pytest-json-report's own report from the pytest child, with our grading as metadata."""

import dataclasses
import json

import pytest

from grader.formats import RENDERERS
from grader.grade import grade


@pytest.fixture
def stub_report(stubs_public):
    return stubs_public  # tests/tooling/conftest.py: graded once per session


def test_every_test_has_pytest_json_reports_fields_and_our_grading(stub_report):
    document = json.loads(RENDERERS["pytest-json"](stub_report))
    assert {"created", "duration", "exitcode", "root", "summary", "tests"} <= set(document)
    ids = [entry["nodeid"] for entry in document["tests"]]
    assert sorted(ids) == sorted(test.id for test in stub_report.tests)
    for entry in document["tests"]:
        assert entry["outcome"] == "failed"
        assert {"task", "suite", "points", "score", "status"} <= set(entry["metadata"])
        assert entry["metadata"]["score"] == 0.0
    assert document["grading"]["score"] == stub_report.score == 0


def test_the_json_format_leaves_the_pytest_json_document_out(stub_report):
    assert stub_report.pytest_json is not None
    assert "pytest_json" not in json.loads(RENDERERS["json"](stub_report))


def test_tests_pytest_never_reported_are_errors_in_the_document(tmp_path):
    (tmp_path / "attention.py").write_text("import os\nos._exit(3)\n")
    report = grade(tmp_path, "public")
    report = dataclasses.replace(report, pytest_json=None)  # as when the pytest child itself was killed before its end
    document = json.loads(RENDERERS["pytest-json"](report))
    assert len(document["tests"]) == len(report.tests)
    assert {entry["outcome"] for entry in document["tests"]} == {"error"}
