"""Output formats of a grading report: each module renders the report dict as one string."""

import json

from grader.formats import classroom, gradescope, summary


def render_json(report, **_):
    return json.dumps(report, indent=2)


RENDERERS = {
    "summary": summary.render,
    "json": render_json,
    "gradescope": gradescope.render,
    "classroom": classroom.render,
}
