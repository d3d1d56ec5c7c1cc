"""What the student reads: the summary's choice and order of messages, honest closing words, print()
output, student strings that cannot break any output format, and timeouts that cost only the
function that hangs."""

import ast
import json

import pytest

from grader.cli import build_parser
from grader.formats import RENDERERS
from grader.grade import grade
from grader.paths import REPO
from grader.records import TestMeta, TestRecord
from grader.report import Status
from grader.run import RawRun
from grader.score import build_report
from grader.tasks import CORE_POINTS
from tests.tooling.misbehaving import REFERENCE, at_import, inject

POISON = "bad \\ud800 input \\x1b[2J\\x00 end"
POISONED = at_import(REFERENCE, f'''
_reference_scores = attention_scores


def attention_scores(q, k, scale=None):
    print("hello from attention_scores")
    raise ValueError("{POISON}")
''')
LOOP_IN_MERGE_HEADS = inject(REFERENCE, "def merge_heads(x):", "while True:\n    pass")


def fake_report(outcomes, suite="public", bonus=None):
    """A report built by the grader's own scoring from (task, points, status, message) outcomes."""
    run = RawRun(impl="attention.py", suites=tuple(suite.split("+")))
    run.manifest, run.results = [], {}
    for number, (task, points, status, message) in enumerate(outcomes + (bonus or [])):
        test_id = f"tests/{suite}/test_{task}.py::test_{number}"
        run.manifest.append(TestMeta(id=test_id, name=f"test_{number}", task=task, points=points, suite=suite,
                                     doc=f"checks {number}"))
        run.results[test_id] = TestRecord(test_id, Status(status), message)
    return build_report(run)


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory):
    folder = tmp_path_factory.mktemp("poisoned")
    (folder / "attention.py").write_text(POISONED)
    return grade(folder, "public")


def test_a_likely_cause_is_shown_without_verbose():
    report = fake_report([("sdpa", 2, "failed", "output has the wrong shape"),
                          ("sdpa", 2, "failed", "wrong values.\nLikely cause: the mask is inverted")])
    text = RENDERERS["summary"](report)
    assert "output has the wrong shape" in text and "Likely cause: the mask is inverted" in text


def test_a_message_shared_by_every_task_is_printed_once():
    crash = "importing attention.py failed with NameError: name 'x' is not defined"
    report = fake_report([(task, 2, "error", crash) for task in ("scores", "causal_mask", "sdpa")])
    assert RENDERERS["summary"](report).count(crash) == 1


def test_a_full_public_suite_is_not_called_all_tests_passed():
    report = fake_report([("scores", 3, "passed", ""), ("sdpa", 4, "passed", "")])
    text = RENDERERS["summary"](report)
    assert "All tests passed" not in text
    assert f"All public tests passed (7/7). The hidden tests ({CORE_POINTS - 7} points) run after the deadline." in text


def test_full_core_marks_without_the_bonus_say_core_and_show_the_bonus():
    report = fake_report([("scores", 3, "passed", "")], suite="public+hidden",
                         bonus=[("tiled", 2, "not_implemented", "tiled_attention is not implemented yet")])
    text = RENDERERS["summary"](report)
    assert "All core tests passed (3/3). Bonus: 0/2 (optional, not counted in the total)." in text


def test_checks_lines_hold_the_whole_docstring(poisoned):
    for test in poisoned.tests:
        tree = ast.parse((REPO / test.file).read_text())
        function = next(node for node in ast.walk(tree) if getattr(node, "name", None) == test.name.split("[")[0])
        assert test.doc == " ".join((ast.get_docstring(function) or "").split())


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_poisoned_exception_messages_render_as_valid_utf8(poisoned, name):
    text = RENDERERS[name](poisoned, show_output=True)
    data = text.encode("utf-8")  # a lone surrogate would raise here
    assert b"\x1b" not in data and b"\x00" not in data
    if name not in TEXT_FORMATS:
        json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8")  # raises if a surrogate survived


TEXT_FORMATS = ("summary", "github", "github-annotations")  # Markdown and workflow commands, not JSON


def test_poisoned_messages_keep_their_text_escaped(poisoned):
    messages = [test.message for test in poisoned.tests if test.task == "scores"]
    assert messages and all("bad \\ud800 input \\x1b[2J\\x00 end" in message for message in messages)


def test_the_summary_says_where_print_output_went(poisoned):
    text = RENDERERS["summary"](poisoned)
    assert "--show-output" in text and "hello from attention_scores" not in text


def test_show_output_prints_what_the_code_printed(poisoned):
    assert build_parser().parse_args(["grade", "--show-output"]).show_output
    text = RENDERERS["summary"](poisoned, show_output=True)
    assert "hello from attention_scores" in text


def test_a_loop_in_one_function_costs_only_the_tests_that_call_it(tmp_path, monkeypatch):
    """Graded on the public files of the tasks read here: mha's, kv_cache's and efficiency's call merge_heads
    too, and each call that times out restarts the worker."""
    from tests.tooling.misbehaving import grade_submission

    monkeypatch.setenv("GRADER_CALL_TIMEOUT", "1")
    report = grade_submission(tmp_path, "student", LOOP_IN_MERGE_HEADS,
                              tasks=("scores", "causal_mask", "softmax_weights", "sdpa", "heads"))
    for task in ("scores", "causal_mask", "softmax_weights", "sdpa"):
        assert report.tasks[task].score == report.tasks[task].max_score, task
    assert report.tasks["heads"].score < report.tasks["heads"].max_score
    assert any("merge_heads" in test.message for test in report.tests if test.status is Status.TIMEOUT)
