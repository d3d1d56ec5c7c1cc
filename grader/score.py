"""Turn a RawRun into the grader's report: per-test, per-task and total scores, plus flags."""

import unicodedata

from grader.tasks import BY_ID, task_order

MISSING = "no result: the run stopped before this test finished (a crash, os._exit, or the time limit)"
OUT_OF_TIME = ("no result: the whole run reached its time limit before this test finished "
               "(look for an infinite loop or far too slow code in the tests that timed out)")
KEPT_CONTROLS = "\n\t"
BIDI_CONTROLS = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escape(char):
    if char in KEPT_CONTROLS:
        return char
    if unicodedata.category(char) in ("Cc", "Cs") or char in BIDI_CONTROLS:
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return char


def clean(text):
    """A student's string made safe for every output: valid UTF-8, control characters escaped
    (newlines and tabs kept), lone surrogates written as \\udxxx."""
    text = text if isinstance(text, str) else str(text)
    if text.isprintable():
        return text
    return "".join(map(_escape, text))


def _round(value):
    return round(value + 0.0, 2)


def clean_all(value):
    """clean() on every string of a JSON-like value."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(str(key)): clean_all(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clean_all(item) for item in value]
    return value


def build_report(run):
    tests = []
    for meta in run.manifest:
        result = run.results.get(meta["id"])
        if result is None:
            status, message = ("timeout", OUT_OF_TIME) if run.timed_out else ("error", MISSING)
        else:
            status, message = result["status"], clean(result["message"])
        points = float(meta["points"])
        tests.append({
            "id": meta["id"],
            "name": meta["name"],
            "task": meta["task"],
            "suite": meta["suite"],
            "doc": meta.get("doc", ""),
            "file": meta.get("file", ""),
            "line": meta.get("line", 0),
            "score": points if status == "passed" else 0.0,
            "max_score": points,
            "status": status,
            "message": message,
            "output": clean(result.get("output", "")) if result else "",
        })
    tests.sort(key=lambda test: (task_order(test["task"]), test["suite"] != "public"))
    tasks = {}
    for test in tests:
        task = tasks.setdefault(test["task"], {
            "title": BY_ID[test["task"]].title if test["task"] in BY_ID else test["task"],
            "bonus": BY_ID[test["task"]].bonus if test["task"] in BY_ID else False,
            "score": 0.0, "max_score": 0.0,
        })
        task["score"] += test["score"]
        task["max_score"] += test["max_score"]
    for task in tasks.values():
        task["score"], task["max_score"] = _round(task["score"]), _round(task["max_score"])
    core = [task for task in tasks.values() if not task["bonus"]]
    bonus = [task for task in tasks.values() if task["bonus"]]
    flags = [clean(flag) for flag in run.flags]
    for result in run.results.values():
        flags.extend(clean(flag) for flag in result.get("flags", []) if clean(flag) not in flags)
    report = {
        "score": _round(sum(task["score"] for task in core)),
        "max_score": _round(sum(task["max_score"] for task in core)),
        "tasks": tasks,
        "tests": tests,
        "flags": flags,
        "suite": "+".join(run.suites),
        "impl": clean(run.impl),
        "execution_time": round(run.elapsed, 2),
    }
    if run.pytest_json is not None:
        report["pytest_json"] = clean_all(run.pytest_json)
    if bonus:
        report["bonus_score"] = _round(sum(task["score"] for task in bonus))
        report["bonus_max_score"] = _round(sum(task["max_score"] for task in bonus))
    return report
