"""Gradescope's results.json, as its autograder specification defines it (score, tests with name, score,
max_score, status and output; tests/tooling/test_gradescope.py checks it against that schema)."""

import json
from typing import Any

from grader.formats import summary
from grader.report import Report, make_report

VISIBILITY = {"public": "visible", "hidden": "after_published"}


def _failure(message: str) -> str:
    """What Gradescope shows for a grading that failed before any test ran: the reason, no points."""
    return json.dumps({"score": 0.0, "output": message, "output_format": "text", "visibility": "visible",
                       "tests": [{"name": "grader", "score": 0.0, "max_score": 0.0, "status": "failed",
                                  "output": message}]})


HIDDEN_NOTE = ("\nThe hidden tests ran too; their results and points show here once your instructor publishes "
               "the grades.\n")


def visible_output(report: Report, hidden_visibility: str) -> str:
    """The top-level output, which Gradescope always shows: the summary of the tests a student may see now. A
    hidden test's name, message or points in it would show what the tests' own visibility keeps back."""
    if hidden_visibility == "visible" or not any(test.suite == "hidden" for test in report.tests):
        return summary.render(report)
    public = [test for test in report.tests if test.suite != "hidden"]
    return summary.render(make_report(public, report.flags, "public", report.impl, report.execution_time)) + HIDDEN_NOTE


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
        "output": visible_output(report, hidden_visibility),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"tasks": {task_id: task.to_json() for task_id, task in report.tasks.items()},
                       "flags": [flag.to_json() for flag in report.flags], "max_score": report.max_score},
        "tests": tests,
    }
    return json.dumps(results, indent=2)
