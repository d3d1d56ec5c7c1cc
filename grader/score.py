"""Turn a RawRun into the grader's report: per-test, per-task and total points, plus flags."""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING, Any

from grader.report import Flag, Report, Status, TestResult, make_report

if TYPE_CHECKING:
    from grader.records import TestMeta, TestRecord
    from grader.run import RawRun

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


def clean(text: object) -> str:
    """A student's string made safe for every output: valid UTF-8, control characters escaped
    (newlines and tabs kept), lone surrogates written as \\udxxx."""
    text = text if isinstance(text, str) else str(text)
    if text.isprintable():
        return text
    return "".join(map(_escape, text))


def clean_all(value: Any) -> Any:
    """clean() on every string of a JSON-like value."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(str(key)): clean_all(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clean_all(item) for item in value]
    return value


def _test_result(meta: TestMeta, result: TestRecord | None, timed_out: bool) -> TestResult:
    if result is None:
        status, message = (Status.TIMEOUT, OUT_OF_TIME) if timed_out else (Status.ERROR, MISSING)
    else:
        status, message = result.status, clean(result.message)
    points = float(meta.points)
    return TestResult(
        id=meta.id, name=meta.name, task=meta.task, suite=meta.suite, status=status, message=message,
        score=points if status is Status.PASSED else 0.0, max_score=points,
        doc=meta.doc, file=meta.file, line=meta.line,
        output=clean(result.output) if result else "",
    )


def build_report(run: RawRun) -> Report:
    if run.manifest is None:
        raise ValueError("build_report needs the run's test list: run.manifest is None")
    tests = [_test_result(meta, run.results.get(meta.id), run.timed_out) for meta in run.manifest]
    flags = [Flag(flag.kind, clean(flag.text)) for flag in run.flags]
    for result in run.results.values():
        for text in result.flags:
            flag = Flag.from_json(clean(text))
            if flag not in flags:
                flags.append(flag)
    pytest_json = clean_all(run.pytest_json) if run.pytest_json is not None else None
    return make_report(tests, flags, "+".join(run.suites), clean(run.impl), run.elapsed, pytest_json)
