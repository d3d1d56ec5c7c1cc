"""Misbehaving submissions, graded as a class with `batch`: every one yields a valid report in all four
formats, and its score is what its code earned. The syntax scan (grader.capabilities, tested on its own) is set
aside, so that the submissions that reach torch's kernels through private names meet the guard behind it.

The class is graded on the public test files of the tasks these tests read (ROBUSTNESS_SUITE), not the whole
public suite: the files of mha, efficiency, kv_cache and tiled call sdpa again and again, and each call of a
crashing or hanging sdpa restarts the worker, which took the batch from about a minute to over three."""

import csv
import json
from pathlib import Path

import jsonschema
import pytest

from grader.formats import RENDERERS
from grader.paths import REPO
from grader.report import FlagKind, Status
from grader.sandbox.policy import Limits
from instructor.batch import run_batch
from tests.tooling.misbehaving import SUBMISSIONS
from tests.tooling.small_checkout import small_tests, task_files

SCHEMA = json.loads((REPO / "tests/schemas/gradescope-results.schema.json").read_text())
IMPORT_FAILURES = ("sys_exit_at_import", "os_exit_at_import", "syntax_error", "name_error_at_import")
CRASHES_IN_SDPA = ("segfault_in_sdpa", "os_exit_in_sdpa", "hang_in_sdpa", "memory_bomb_in_sdpa",
                   "calls_torch_sdpa", "calls_aten_sdpa_without_torch_function")
UNTOUCHED_TASKS = ("scores", "causal_mask", "softmax_weights", "heads", "divisibility")
ROBUSTNESS_SUITE = task_files((*UNTOUCHED_TASKS, "sdpa"))


def no_scan(source):
    return []


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    for name, source in SUBMISSIONS.items():
        (root / name).mkdir()
        (root / name / "attention.py").write_text(source)
    (root / "empty_submission").mkdir()
    output = root / "grades.csv"
    tests = small_tests(tmp_path_factory.mktemp("tests"), ROBUSTNESS_SUITE)
    reports = run_batch(root, suite="public", jobs=2, output=output, progress=False, timeout=300, tests_dir=tests,
                        syntax_scan=no_scan, limits=Limits(call_seconds=2.0, address_space_mb=512))
    return reports, output


def tasks_full(report, ids):
    return {task_id: report.tasks[task_id] for task_id in ids
            if report.tasks[task_id].score != report.tasks[task_id].max_score}


def test_reference_earns_every_point(graded):
    report = graded[0]["reference"]
    assert report.score == report.max_score > 0, report.flags
    assert report.flags == []


@pytest.mark.parametrize("name", ["stubs", "patches_comparisons", "fake_reports_and_output", "empty_submission"])
def test_unimplemented_or_tampering_submissions_earn_nothing(graded, name):
    assert graded[0][name].score == 0


def test_fake_report_lines_reach_no_ones_report_channel(graded):
    """The sandboxed worker sees no other process, so its lines reach no pipe (before: flagged unsigned)."""
    unsigned = [name for name, report in graded[0].items() if any("unsigned" in flag.text for flag in report.flags)]
    assert unsigned == []


@pytest.mark.parametrize("name", IMPORT_FAILURES)
def test_import_failures_error_every_test_with_the_reason(graded, name):
    report = graded[0][name]
    assert report.score == 0
    assert {test.status for test in report.tests} == {Status.ERROR}
    assert all("import" in test.message for test in report.tests)


@pytest.mark.parametrize("name", CRASHES_IN_SDPA)
def test_a_broken_sdpa_costs_only_the_tests_that_use_it(graded, name):
    report = graded[0][name]
    assert tasks_full(report, UNTOUCHED_TASKS) == {}
    assert report.tasks["sdpa"].score == 0


def test_a_hang_is_reported_as_a_timeout(graded):
    statuses = {test.status for test in graded[0]["hang_in_sdpa"].tests if test.task == "sdpa"}
    assert statuses == {Status.TIMEOUT}


@pytest.mark.parametrize("name", ["calls_torch_sdpa", "calls_aten_sdpa_without_torch_function"])
def test_calling_torch_attention_is_flagged(graded, name):
    report = graded[0][name]
    assert any(flag.kind is FlagKind.FROM_SCRATCH for flag in report.flags)
    failing = [test for test in report.tests if test.task == "sdpa"]
    assert any("torch's own attention" in test.message for test in failing)


def test_a_missing_function_is_named(graded):
    report = graded[0]["missing_function"]
    messages = [test.message for test in report.tests if not test.passed]
    assert messages and all("merge_heads" in message for message in messages)
    assert tasks_full(report, ("scores", "causal_mask", "softmax_weights", "sdpa")) == {}


@pytest.mark.parametrize("name", sorted(SUBMISSIONS) + ["empty_submission"])
def test_every_format_renders_a_valid_report(graded, name):
    report = graded[0][name]
    assert report.tests, "a report always lists the suite's tests"
    assert RENDERERS["summary"](report).strip()
    assert json.loads(RENDERERS["json"](report))["max_score"] == report.max_score
    results = json.loads(RENDERERS["gradescope"](report))
    jsonschema.validate(results, SCHEMA)
    assert results["score"] == report.score + (report.bonus_score or 0)
    classroom_text = RENDERERS["classroom"](report)
    assert len(classroom_text) < 98_000
    classroom = json.loads(classroom_text)
    assert classroom["max_score"] > 0 and classroom["tests"]
    assert all(isinstance(test["score"], (int, float)) for test in classroom["tests"])
    # the core points: never above max_score
    assert round(sum(test["score"] for test in classroom["tests"]), 2) == report.score
    assert classroom["max_score"] == report.max_score or report.max_score == 0
    if report.score < report.max_score:
        assert classroom["status"] in ("fail", "error")


def test_gradebook_has_one_row_per_student_and_a_report_each(graded):
    reports, output = graded
    with open(output) as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["student"] for row in rows) == sorted(reports)
    reference = next(row for row in rows if row["student"] == "reference")
    assert float(reference["total"]) == reports["reference"].max_score
    assert all((Path(str(output).removesuffix(".csv") + "-reports") / f"{name}.json").exists() for name in reports)


def test_report_lines_are_split_whole_across_chunks_and_an_overlong_one_is_dropped(monkeypatch):
    from grader import run

    monkeypatch.setattr(run, "MAX_LINE", 10)
    lines = run._Lines()
    assert lines.feed(b"abc") == []
    assert lines.feed(b"de\nfg") == [b"abcde"]
    assert lines.feed(b"h\n" + b"x" * 8) == [b"fgh"]
    assert lines.feed(b"y" * 8) == []
    assert lines.feed(b"z\nok\n") == [None, b"ok"]
