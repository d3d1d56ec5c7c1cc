"""Output formats of a grading report: each module renders the report dict as one string."""

import json

from grader.formats import classroom, gradescope, pytest_json, summary


def render_json(report, **_):
    """Our report; pytest-json-report's own is the pytest-json format."""
    return json.dumps({key: value for key, value in report.items() if key != "pytest_json"}, indent=2)


RENDERERS = {
    "summary": summary.render,
    "json": render_json,
    "gradescope": gradescope.render,
    "classroom": classroom.render,
    "pytest-json": pytest_json.render,
}
