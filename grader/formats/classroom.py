"""The JSON that classroom-resources/autograding-grading-reporter@v1 reads (see ../shared/formats).

One entry per task, so that Classroom's sum of scores equals our total and its console table agrees
(bonus tasks are entries too, so bonus points add to the sum; max_score is the core's 100);
an entry whose tests errored (import error, crash) gets status `error`, the only status whose message
the reporter prints. The step log carries the full summary as well.
"""

import json

LIMIT = 90_000


def _status(task_id, tests):
    statuses = {test["status"] for test in tests if test["task"] == task_id}
    if statuses <= {"passed"}:
        return "pass"
    return "error" if statuses & {"error", "timeout"} else "fail"


def _message(task_id, tests, limit):
    failures = [test for test in tests if test["task"] == task_id and test["status"] != "passed"]
    if not failures:
        return ""
    return f"{failures[0]['name']}: {failures[0]['message']}"[:limit]


def render(report, **_):
    def document(limit):
        entries = []
        for task_id, task in report["tasks"].items():
            entries.append({
                "name": f"{task_id} ({task['title']}{', bonus' if task['bonus'] else ''})",
                "status": _status(task_id, report["tests"]),
                "score": round(task["score"], 2),
                "message": _message(task_id, report["tests"], limit),
                "test_code": f"python -m grader grade --suite {report['suite']}  # task {task_id}",
                "filename": "",
                "line_no": 0,
                "execution_time": f"{report['execution_time']:.2f}s",
            })
        statuses = {entry["status"] for entry in entries}
        overall = "pass" if statuses <= {"pass"} else ("error" if "error" in statuses else "fail")
        return json.dumps({"version": 1, "status": overall, "max_score": report["max_score"] or 1, "tests": entries})

    text = document(2000)
    return text if len(text) <= LIMIT else document(200)
