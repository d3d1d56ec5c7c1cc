"""Gradescope's results.json (see ../shared/formats and gradescope-autograders' specs)."""

import json

from grader.formats import summary

VISIBILITY = {"public": "visible", "hidden": "after_published"}


def render(report, hidden_visibility="after_published", **_):
    visibility = dict(VISIBILITY, hidden=hidden_visibility)
    tests = []
    for number, test in enumerate(report["tests"], start=1):
        tests.append({
            "name": f"{test['task']}: {test['name']}",
            "number": str(number),
            "score": test["score"],
            "max_score": test["max_score"],
            "status": "passed" if test["status"] == "passed" else "failed",
            "output": (test["doc"] + "\n\n" if test["doc"] else "") + (test["message"] or "passed"),
            "tags": [test["task"], test["suite"]],
            "visibility": visibility.get(test["suite"], "visible"),
        })
    results = {
        "score": report["score"] + report.get("bonus_score", 0.0),
        "execution_time": report["execution_time"],
        "output": summary.render(report),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"tasks": report["tasks"], "flags": report["flags"], "max_score": report["max_score"]},
        "tests": tests,
    }
    return json.dumps(results, indent=2)
