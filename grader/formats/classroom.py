"""The JSON that GitHub Classroom's classroom-resources/autograding-grading-reporter@v1 reads (its base64
`<RUNNER>_RESULTS` output; tests/tooling/test_classroom_reporter.py runs the real reporter on it).

How the reporter reads it (dist/main.js): Classroom records the sum of the entries' `score` out of
`max_score`; the console table shows passed entries / all entries x `max_score`; a top-level `status`
other than `pass` marks the run red; only an `error` entry's message is printed. So:
- one entry per point of each core test (a 2-point test is two entries), every entry worth the same,
  so that the console table and the recorded points agree;
- only core tests: recorded points equal the core score `make test` shows and never exceed the maximum,
  and `status` is `pass` exactly when the core is full, whatever the bonus;
- the bonus, and the feedback in words, are in the grade step's log (the summary table);
- the reporter prints an error's message as it is, so a message goes through grader.formats.workflow.inert:
  a student's exception text cannot become a workflow command in the reporter's step.
"""

import json
from typing import Any

from grader.formats.workflow import inert
from grader.report import Report, Status, TestResult

LIMIT = 90_000
STATUS = {Status.PASSED: "pass", Status.FAILED: "fail", Status.NOT_IMPLEMENTED: "fail", Status.ERROR: "error",
          Status.TIMEOUT: "error"}


def _entries(test: TestResult, limit: int, said: dict[str, str]) -> list[dict[str, Any]]:
    """The entries of one test: one per point, the first carrying the command and the message."""
    units = max(1, round(test.max_score))
    status = STATUS[test.status]
    name = f"{test.task}: {test.name}"
    message = inert(f"{name}: {test.message}"[:limit]) if status != "pass" else ""
    if message and test.message in said:
        message = f"{name}: the same error as {said[test.message]}"
    said.setdefault(test.message, name)
    entries = []
    for unit in range(1, units + 1):
        entries.append({
            "name": name if units == 1 else f"{name} (point {unit} of {units})",
            "status": status,
            "score": round(test.score / units, 2),
            "message": message if unit == 1 else (f"{name}: see point 1 of {units}" if message else ""),
            "test_code": f"python -m pytest {test.id}" if unit == 1 else "",
            "filename": "",
            "line_no": 0,
            "execution_time": "0s",
        })
    return entries


def render(report: Report, **_: Any) -> str:
    core = [test for test in report.tests if not report.tasks[test.task].bonus]

    def document(limit: int) -> str:
        said: dict[str, str] = {}
        entries = [entry for test in core for entry in _entries(test, limit, said)]
        statuses = {entry["status"] for entry in entries}
        overall = "pass" if report.full_marks else ("error" if "error" in statuses else "fail")
        return json.dumps({"version": 1, "status": overall, "max_score": report.max_score or 1,
                           "tests": entries})

    text = document(2000)
    return text if len(text) <= LIMIT else document(200)


def fallback(max_score: float, why: str) -> str:
    """The document for a run the grader could not finish (a grader error): one error entry worth nothing, out
    of the same maximum a normal run of the suite records (the public core points), so that Classroom's
    record of a failed run is 0 of that maximum, not of another."""
    return json.dumps({"version": 1, "status": "error", "max_score": max_score or 1, "tests": [{
        "name": "grader", "status": "error", "score": 0, "message": f"The grader could not run: {why}"[:2000],
        "test_code": "make test", "filename": "", "line_no": 0, "execution_time": "0s"}]})
