"""The report in pytest-json-report's format, so that any tool that reads those reads ours.

pytest-json-report ran in the pytest child and its report came back signed (grader.plugin). Each test
entry keeps its fields (nodeid, outcome, setup/call/teardown with duration and longrepr) and gets our
grading in `metadata`: task, suite, points, score and our status (a timeout or a crash of student code
counts as failed there even when pytest's own outcome differs). Tests pytest never reported (the run
was cut short) are added with outcome "error".

Left out (grader.run.JSON_REPORT's --json-report-omit): `collectors`, each test's `keywords`, `log` and
captured streams (`stdout`, `stderr`), and the top-level `warnings`.
"""

import json
from typing import Any

from grader.report import Report, TestResult


def render(report: Report, **_: Any) -> str:
    document = dict(report.pytest_json or {"tests": [], "summary": {}})
    graded = {test.id: test for test in report.tests}
    tests = []
    for entry in document.get("tests", []):
        test = graded.pop(entry["nodeid"], None)
        tests.append(dict(entry, metadata=dict(entry.get("metadata", {}), **_grading(test))) if test else entry)
    for test in graded.values():
        tests.append({"nodeid": test.id, "lineno": test.line, "outcome": "error",
                      "call": {"outcome": "error", "longrepr": test.message}, "metadata": _grading(test)})
    document["tests"] = tests
    document["grading"] = {"score": report.score, "max_score": report.max_score,
                           "flags": [flag.to_json() for flag in report.flags], "suite": report.suite}
    return json.dumps(document, indent=2)


def _grading(test: TestResult) -> dict[str, Any]:
    return {"task": test.task, "suite": test.suite, "points": test.max_score, "score": test.score,
            "status": test.status.reported}
