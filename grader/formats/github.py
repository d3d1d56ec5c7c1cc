"""GitHub Actions' own surfaces, for the Classroom workflow:

- `github`: the per-task table in Markdown, for $GITHUB_STEP_SUMMARY (shown on the run's page);
- `github-annotations`: one `::error file=assignment/FILE,line=N::` workflow command per failing task
  where a line of the student's file is known (shown on the file in the run and the commit), printed to the log.

A task's line is where its first failure raised in the student's file ("at FILE line N"), or else the
`def` of the function its message names. Only the student's file is read (parsed, never run).
"""

import ast
import os
import re
from pathlib import Path
from typing import Any

from grader import syntax
from grader.formats.summary import task_line
from grader.lab import LAB
from grader.paths import IMPL_NAME, find_impl
from grader.report import Report, Status, TestResult

RAISED_AT = re.compile(rf"at {re.escape(IMPL_NAME)} line (\d+)")
CALLED = re.compile(r"^\s*(\w+)\(")
STATE = re.compile(r"\s{3}(ok|not implemented yet|\d+ of \d+ tests failed)$")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_summary(report: Report, **_: Any) -> str:
    """The table `make test` prints, as Markdown."""
    rows = [f"### {LAB.name}: public tests", "", "| task | what | points | state |", "|---|---|---:|---|"]
    for task_id, task in report.tasks.items():
        state = STATE.search(task_line(task_id, task, report.tests))
        points = f"{task.score:g} / {task.max_score:g}" + (" (bonus)" if task.bonus else "")
        rows.append(f"| `{task_id}` | {_cell(task.title)} | {points} | {state.group(1) if state else ''} |")
    rows.append(f"| **total** | | **{report.score:g} / {report.max_score:g}** | |")
    if report.bonus_score is not None:
        rows.append(f"| bonus | | {report.bonus_score:g} / {report.bonus_max_score or 0:g} | |")
    if report.flags:
        rows += ["", *[f"- {_cell(str(flag))}" for flag in report.flags]]
    rows += ["", "Run `make test` for what to fix in each task."]
    return "\n".join(rows) + "\n"


def _def_lines(impl: Path | None) -> dict[str, int]:
    """{function or method name: its def line} in the student's file, or {} if it does not parse."""
    if impl is None:
        return {}
    try:
        tree = syntax.parse(impl.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return {}
    return {node.name: node.lineno for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def line_of(test: TestResult, defs: dict[str, int]) -> int | None:
    raised = RAISED_AT.search(test.message)
    if raised:
        return int(raised.group(1))
    called = CALLED.match(test.message)
    return defs.get(called.group(1)) if called else None


def _escape(text: str, property_value: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property_value else text


def _shown_path(impl: Path | None) -> str:
    if impl is None:
        return f"assignment/{IMPL_NAME}"
    try:
        return Path(os.path.relpath(impl.resolve(), Path.cwd())).as_posix()
    except ValueError:
        return impl.name


def render_annotations(report: Report, **_: Any) -> str:
    """One ::error workflow command per failing task whose line in the student's file is known; for a grading
    that failed before any test ran, one ::error naming why."""
    if report.failure is not None:
        return f"::error title=grading failed::{_escape(str(report.failure))}\n"
    impl = find_impl(report.impl) if report.impl else None
    impl = impl if impl is not None and impl.is_file() else None
    defs = _def_lines(impl)
    path = _escape(_shown_path(impl), property_value=True)
    commands = []
    for task_id, task in report.tasks.items():
        failed = [test for test in report.tests if test.task == task_id and test.status is not Status.PASSED]
        line = next((found for test in failed if (found := line_of(test, defs)) is not None), None)
        if not failed or line is None:
            continue
        first = failed[0].message.strip().splitlines()[0] if failed[0].message.strip() else failed[0].name
        title = _escape(f"{task_id}: {task.score:g} / {task.max_score:g} points", property_value=True)
        commands.append(f"::error file={path},line={line},title={title}::{_escape(first)}")
    return "\n".join(commands) + ("\n" if commands else "")
