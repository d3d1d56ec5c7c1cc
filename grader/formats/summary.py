"""The table a student reads after `make test`: each task's points and, for each task that lost
points, the first failure's message."""

import textwrap

STATUS_WORDS = {"failed": "failed", "error": "error", "timeout": "timed out"}


def _points(value):
    return f"{value:g}"


def task_line(task_id, task, tests):
    lost = [test for test in tests if test["task"] == task_id and test["status"] != "passed"]
    total = sum(1 for test in tests if test["task"] == task_id)
    if not lost:
        state = "ok"
    elif all("not implemented yet" in test["message"] for test in lost):
        state = "not implemented yet"
    else:
        state = f"{len(lost)} of {total} tests failed"
    points = f"{_points(task['score'])} / {_points(task['max_score'])}"
    return f"  {task_id:<16} {task['title']:<30} {points:>11}   {state}"


def failure_block(test):
    header = f"- {test['task']}: {test['name']} ({STATUS_WORDS.get(test['status'], test['status'])})"
    if test["doc"]:
        header += f"\n    checks: {test['doc']}"
    body = textwrap.indent(test["message"].strip() or "(no message)", "    ")
    return f"{header}\n{body}"


def render(report, verbose=False, **_):
    tests = report["tests"]
    lines = [
        f"Attention from Scratch: {report['suite']} tests on {report['impl']}",
        "",
        f"  {'task':<16} {'':<30} {'points':>11}   status",
    ]
    for task_id, task in report["tasks"].items():
        lines.append(task_line(task_id, task, tests))
    lines.append(f"  {'total':<16} {'':<30} {_points(report['score']) + ' / ' + _points(report['max_score']):>11}")
    if "bonus_score" in report:
        lines.append(f"  {'bonus':<16} {'':<30} {_points(report['bonus_score']) + ' / ' + _points(report['bonus_max_score']):>11}")
    failures = [test for test in tests if test["status"] != "passed"]
    if not verbose:
        first = {}
        for test in failures:
            first.setdefault(test["task"], test)
        failures = list(first.values())
    if failures:
        lines += ["", "What to fix" + (" (first failure of each task; --verbose shows all):" if not verbose else ":")]
        lines += [failure_block(test) for test in failures]
    if report["flags"]:
        lines += ["", "Flags for the instructor:"] + [f"  ! {flag}" for flag in report["flags"]]
    if not failures and report["max_score"]:
        lines += ["", "All tests passed."]
    return "\n".join(lines) + "\n"
