"""The typed report: its JSON round trip, the status of a stub left as given, and the one factory that
every report, normal or failure, comes from."""

import json

import pytest

import grader.report
import grader.score
from grader import gradescope, plugin
from grader.formats import RENDERERS, summary
from grader.grade import missing_report
from grader.records import TestMeta, TestRecord
from grader.report import NOT_IMPLEMENTED_WORDS, Flag, FlagKind, Report, Status, TestResult, make_report
from grader.run import RawRun
from grader.sandbox.errors import RaisedInSubmission, SubmissionCrashed, SubmissionTimeout
from grader.score import build_report
from instructor.batch import error_report


def result(task="sdpa", status=Status.FAILED, message="wrong values", suite="public", points=2.0):
    return TestResult(id=f"tests/{suite}/test_{task}.py::test_{status.value}", name=f"test_{status.value}",
                      task=task, suite=suite, status=status, message=message,
                      score=points if status is Status.PASSED else 0.0, max_score=points, doc="checks it")


def a_report():
    tests = [result(status=status, message=f"{NOT_IMPLEMENTED_WORDS}" if status is Status.NOT_IMPLEMENTED else "m")
             for status in Status]
    tests.append(result(task="tiled", status=Status.PASSED, message=""))
    flags = [Flag(kind, "why") for kind in FlagKind if kind not in grader.report.UNLABELLED]
    flags.append(Flag(FlagKind.OTHER, "an unlabelled flag"))
    return make_report(tests, flags, "public+hidden", "student/attention.py", 1.234, {"tests": [], "summary": {}})


def not_implemented_error(message):
    error = RaisedInSubmission(message)
    error.remote = {"bases": ["NotImplementedError", "RuntimeError"], "message": message, "doing": "calling f",
                    "type": "NotImplementedError"}
    return error


def test_a_report_survives_a_json_round_trip():
    report = a_report()
    assert Report.from_json(json.loads(json.dumps(report.to_json()))) == report


def test_a_failure_report_survives_a_json_round_trip():
    report = error_report("folder", "all", "RuntimeError: boom")
    assert Report.from_json(report.to_json()) == report


@pytest.mark.parametrize("kind", list(FlagKind))
def test_each_flag_kind_survives_its_json_text(kind):
    flag = Flag(kind, "some reason")
    assert Flag.from_json(flag.to_json()) == flag


def test_a_flag_is_written_as_its_kind_then_its_text():
    assert Flag(FlagKind.MISSING, "no attention.py in the submission").to_json() == \
        "missing: no attention.py in the submission"


def test_the_json_shows_a_not_implemented_test_as_failed():
    assert result(status=Status.NOT_IMPLEMENTED, message=NOT_IMPLEMENTED_WORDS).to_json()["status"] == "failed"


def test_a_stub_left_as_given_is_not_implemented():
    assert plugin.failed_status(not_implemented_error("f is not implemented yet"), "call") is Status.NOT_IMPLEMENTED


def test_a_bare_not_implemented_error_is_not_implemented_and_says_so():
    error = not_implemented_error("")
    assert plugin.failed_status(error, "call") is Status.NOT_IMPLEMENTED
    assert NOT_IMPLEMENTED_WORDS in plugin.explain(error)


@pytest.mark.parametrize("error, when, status", [
    (AssertionError("wrong"), "call", Status.FAILED),
    (AssertionError("wrong"), "setup", Status.ERROR),
    (SubmissionTimeout("slow"), "call", Status.TIMEOUT),
    (SubmissionCrashed("segfault"), "call", Status.ERROR),
])
def test_other_failures_keep_their_status(error, when, status):
    assert plugin.failed_status(error, when) is status


def test_the_summary_calls_a_task_of_not_implemented_tests_not_implemented():
    tests = [result(status=Status.NOT_IMPLEMENTED, message="sdpa is not implemented yet")]
    report = make_report(tests, [], "public", "attention.py")
    assert summary.task_line("sdpa", report.tasks["sdpa"], report.tests).endswith("not implemented yet")


def test_the_summary_goes_by_the_status_not_by_the_words_of_a_failure():
    tests = [result(status=Status.FAILED, message="raised ValueError: not implemented yet")]
    report = make_report(tests, [], "public", "attention.py")
    assert summary.task_line("sdpa", report.tasks["sdpa"], report.tests).endswith("1 of 1 tests failed")


@pytest.fixture
def factory_calls(monkeypatch):
    """Every call of make_report, from any module that uses it."""
    calls = []

    def recording(*args, **kwargs):
        calls.append(make_report(*args, **kwargs))
        return calls[-1]

    monkeypatch.setattr(grader.report, "make_report", recording)
    monkeypatch.setattr(grader.score, "make_report", recording)
    return calls


def test_a_graded_run_is_built_by_the_factory(factory_calls):
    run = RawRun(impl="attention.py", suites=("public",), manifest=[
        TestMeta(id="t::a", name="a", task="sdpa", points=2, suite="public")])
    run.results = {"t::a": TestRecord("t::a", Status.NOT_IMPLEMENTED, "sdpa is not implemented yet")}
    report = build_report(run)
    assert factory_calls == [report] and report.tests[0].status is Status.NOT_IMPLEMENTED


def test_a_missing_submission_is_built_by_the_factory(factory_calls, tmp_path):
    report = missing_report(tmp_path, "public")
    assert factory_calls == [report] and report.flags[0].kind is FlagKind.MISSING


def test_a_grader_error_in_batch_is_built_by_the_factory(factory_calls):
    report = error_report("folder", "all", "RuntimeError: boom")
    assert factory_calls == [report] and report.failure == Flag(FlagKind.GRADER_ERROR, "RuntimeError: boom")


@pytest.mark.parametrize("kind", [FlagKind.GRADER_ERROR, FlagKind.OUT_OF_TIME])
def test_a_gradescope_failure_is_built_by_the_factory(factory_calls, tmp_path, kind):
    text = gradescope._render_failure(tmp_path, kind, "the reason")
    assert len(factory_calls) == 1 and factory_calls[0].failure == Flag(kind, "the reason")
    assert json.loads(text) == {"score": 0.0, "output": "the reason", "output_format": "text", "visibility": "visible",
                                "tests": [{"name": "grader", "score": 0.0, "max_score": 0.0, "status": "failed",
                                           "output": "the reason"}]}


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_every_format_renders_a_failure_report(name):
    assert RENDERERS[name](error_report("folder", "all", "RuntimeError: boom")).strip()


def test_the_summary_says_where_the_points_come_from_on_every_run():
    """Not only on a full pass: a failing public run shows its share and what the hidden suite adds."""
    tests = [result(task="sdpa", status=Status.PASSED, points=3.0), result(task="scores", points=2.0),
             result(task="tiled", status=Status.PASSED, points=4.0)]
    text = RENDERERS["summary"](make_report(tests, [], "public", "student/attention.py"))
    assert "Points: public 3 of 5 (the hidden suite adds 95 points after the deadline)." in text
    both = tests + [result(task="sdpa", suite="hidden", points=1.0)]
    text = RENDERERS["summary"](make_report(both, [], "public+hidden", "student/attention.py"))
    assert "Points: public 3 of 5; hidden 0 of 1." in text
