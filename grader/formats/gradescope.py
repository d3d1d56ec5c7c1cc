"""Gradescope's results.json, as its autograder specification defines it (score, tests with name, score,
max_score, status and output; tests/tooling/test_gradescope.py checks it against that schema)."""

import json
from typing import Any

from grader.formats import summary
from grader.report import Report

VISIBILITY = {"public": "visible", "hidden": "after_published"}


def _failure(message: str) -> str:
    """What Gradescope shows for a grading that failed before any test ran: the reason, no points."""
    return json.dumps({"score": 0.0, "output": message, "output_format": "text", "visibility": "visible",
                       "tests": [{"name": "grader", "score": 0.0, "max_score": 0.0, "status": "failed",
                                  "output": message}]})


def render(report: Report, hidden_visibility: str = "after_published", **_: Any) -> str:
    if report.failure is not None:
        return _failure(report.failure.text)
    visibility = dict(VISIBILITY, hidden=hidden_visibility)
    tests = []
    for number, test in enumerate(report.tests, start=1):
        tests.append({
            "name": f"{test.task}: {test.name}",
            "number": str(number),
            "score": test.score,
            "max_score": test.max_score,
            "status": "passed" if test.passed else "failed",
            "output": (test.doc + "\n\n" if test.doc else "") + (test.message or "passed"),
            "tags": [test.task, test.suite],
            "visibility": visibility.get(test.suite, "visible"),
        })
    results = {
        "score": report.score + (report.bonus_score or 0.0),
        "execution_time": report.execution_time,
        "output": summary.render(report),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"tasks": {task_id: task.to_json() for task_id, task in report.tasks.items()},
                       "flags": [flag.to_json() for flag in report.flags], "max_score": report.max_score},
        "tests": tests,
    }
    return json.dumps(results, indent=2)
