"""The table a student reads after `make test`: each task's points and, for each task that lost
points, its first failure (and its first "Likely cause" diagnosis), each message printed once."""

import textwrap
from collections.abc import Sequence
from typing import Any

from grader.lab import LAB
from grader.report import Report, Status, TaskScore, TestResult
from grader.tasks import CORE_POINTS

STATUS_WORDS = {Status.FAILED: "failed", Status.NOT_IMPLEMENTED: "failed", Status.ERROR: "error",
                Status.TIMEOUT: "timed out"}
LIKELY = "Likely cause:"
OUTPUT_LINES = 40
WIDTH = 100


def _points(value: float) -> str:
    return f"{value:g}"


def task_line(task_id: str, task: TaskScore, tests: list[TestResult]) -> str:
    lost = [test for test in tests if test.task == task_id and not test.passed]
    total = sum(1 for test in tests if test.task == task_id)
    if not lost:
        state = "ok"
    elif all(test.status is Status.NOT_IMPLEMENTED for test in lost):
        state = "not implemented yet"
    else:
        state = f"{len(lost)} of {total} tests failed"
    points = f"{_points(task.score)} / {_points(task.max_score)}"
    return f"  {task_id:<16} {task.title:<30} {points:>11}   {state}"


def chosen_failures(failures: list[TestResult], verbose: bool) -> list[TestResult]:
    """Every failure (verbose), or per task the first one plus the first with a Likely cause."""
    if verbose:
        return failures
    chosen: list[TestResult] = []
    for task_id in dict.fromkeys(test.task for test in failures):
        in_task = [test for test in failures if test.task == task_id]
        likely = next((test for test in in_task if LIKELY in test.message), None)
        chosen += [in_task[0]] + ([likely] if likely is not None and likely is not in_task[0] else [])
    return chosen


def failure_block(test: TestResult, same: Sequence[TestResult] = ()) -> str:
    header = f"- {test.task}: {test.name} ({STATUS_WORDS[test.status]})"
    if test.doc:
        header += "\n" + textwrap.fill(test.doc, WIDTH, initial_indent="    checks: ", subsequent_indent=" " * 12)
    body = textwrap.indent(test.message.strip() or "(no message)", "    ")
    block = f"{header}\n{body}"
    if same:
        names = ", ".join(f"{other.task}: {other.name}" for other in same)
        block += "\n" + textwrap.fill(f"The same message for: {names}", WIDTH, initial_indent="    ",
                                      subsequent_indent="    ")
    return block


def failure_blocks(failures: list[TestResult]) -> list[str]:
    """One block per distinct message: an import error that failed every test is printed once."""
    firsts: list[TestResult] = []
    same: dict[str, list[TestResult]] = {}
    for test in failures:
        key = test.message.strip()
        if key in same:
            same[key].append(test)
        else:
            same[key] = []
            firsts.append(test)
    return [failure_block(test, same[test.message.strip()]) for test in firsts]


def _suite_option(report: Report) -> str:
    return "all" if "+" in report.suite else report.suite


def output_section(report: Report, show_output: bool) -> list[str]:
    """Where print() output went; with show_output, its last lines, under the test that printed them."""
    printed = [test for test in report.tests if test.output]
    if not show_output:
        if not printed:
            return []
        command = f"python -m grader grade --suite {_suite_option(report)} --show-output"
        return ["", f"Your code printed output during {len(printed)} test(s). print() output goes to the "
                    f"worker's log, not to this table: `{command}` shows its last lines."]
    if not printed:
        return ["", "Your code printed nothing while the tests ran."]
    lines = []
    for test in printed:
        lines.append(f"  [{test.task}: {test.name}]")
        lines += [f"    {line}" for line in test.output.rstrip("\n").splitlines()]
    return ["", f"What your code printed (the worker's log, last {OUTPUT_LINES} lines):"] + lines[-OUTPUT_LINES:]


def closing_lines(report: Report) -> list[str]:
    """The verdict, in words that never claim more than was run."""
    score, maximum = report.score, report.max_score
    if not report.full_marks:
        return []
    bonus_max = report.bonus_max_score or 0
    bonus_full = (report.bonus_score or 0) == bonus_max
    core = "" if bonus_full else " core"
    total = f"({_points(score)}/{_points(maximum)})"
    suite = report.suite
    if suite == "public":
        verdict = f"All{core} public tests passed {total}."
        hidden = CORE_POINTS - maximum
        if hidden > 0:
            verdict += f" The hidden tests ({_points(hidden)} points) run after the deadline."
    elif suite == "hidden":
        other = _points(CORE_POINTS - maximum)
        verdict = f"All{core} hidden tests passed {total}. The public tests hold the other {other} points."
    else:
        verdict = f"All{core} tests passed {total}."
    if bonus_max:
        verdict += f" Bonus: {_points(report.bonus_score or 0)}/{_points(bonus_max)}" + (
            "." if bonus_full else " (optional, not counted in the total).")
    return ["", verdict]


def _core_points(report: Report, suite: str) -> tuple[float, float]:
    """(score, maximum) of the core (not bonus) tests of one suite."""
    tests = [test for test in report.tests if test.suite == suite
             and not (report.tasks.get(test.task) and report.tasks[test.task].bonus)]
    return sum(test.score for test in tests), sum(test.max_score for test in tests)


def suite_line(report: Report) -> list[str]:
    """Where the points come from, on every run: the public suite's share and what the hidden suite adds."""
    suites = [name for name in ("public", "hidden") if any(test.suite == name for test in report.tests)]
    if not suites:
        return []
    parts = []
    for name in suites:
        score, maximum = _core_points(report, name)
        parts.append(f"{name} {_points(score)} of {_points(maximum)}")
    line = "; ".join(parts)
    if suites == ["public"]:
        hidden = CORE_POINTS - _core_points(report, "public")[1]
        if hidden > 0:
            line += f" (the hidden suite adds {_points(hidden)} points after the deadline)"
    return ["", f"Points: {line}."]


def render(report: Report, verbose: bool = False, show_output: bool = False, **_: Any) -> str:
    tests = report.tests
    lines = [
        f"{LAB.title}: {report.suite} tests on {report.impl}",
        "",
        f"  {'task':<16} {'':<30} {'points':>11}   status",
    ]
    for task_id, task in report.tasks.items():
        lines.append(task_line(task_id, task, tests))
    lines.append(f"  {'total':<16} {'':<30} {_points(report.score) + ' / ' + _points(report.max_score):>11}")
    if report.bonus_score is not None:
        bonus = f"{_points(report.bonus_score)} / {_points(report.bonus_max_score or 0)}"
        lines.append(f"  {'bonus':<16} {'':<30} {bonus:>11}")
    lines += suite_line(report)
    failures = [test for test in tests if not test.passed]
    if failures:
        how = ":" if verbose else " (first failure of each task and its likely cause; --verbose shows all):"
        lines += ["", "What to fix" + how]
        lines += failure_blocks(chosen_failures(failures, verbose))
    lines += output_section(report, show_output)
    if report.flags:
        lines += ["", "Flags for the instructor:"] + [f"  ! {flag}" for flag in report.flags]
    lines += closing_lines(report)
    return "\n".join(lines) + "\n"
