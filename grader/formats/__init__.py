"""Output formats of a grading report: each module renders a Report as one string."""

import dataclasses
import json
from typing import Any

from grader.formats import classroom, github, gradescope, pytest_json, summary
from grader.report import Report


def render_json(report: Report, **_: Any) -> str:
    """Our report; pytest-json-report's own is the pytest-json format."""
    return json.dumps(dataclasses.replace(report, pytest_json=None).to_json(), indent=2)


RENDERERS = {
    "summary": summary.render,
    "json": render_json,
    "gradescope": gradescope.render,
    "classroom": classroom.render,
    "pytest-json": pytest_json.render,
    "github": github.render_summary,
    "github-annotations": github.render_annotations,
}
