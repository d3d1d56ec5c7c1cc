"""A submission's use of resources costs only its own tests: memory in a tree of processes, a flood of output,
an exception with a giant class name, an oversized attention.py, and the worker's messages (compressed or too
large) are bounded, never the grader's nor a classmate's problem."""

import io
import json
import zipfile

import pytest

from grader.capabilities import scan
from grader.report import FlagKind
from grader.sandbox import isolation as sandbox
from grader.sandbox import wire
from tests.tooling.misbehaving import REFERENCE, grade_submission, redteam_submission

needs_namespaces = pytest.mark.skipif(sandbox.level() != "namespaces", reason="needs root and namespaces (CI has both)")
UNTOUCHED_TASKS = ("scores", "causal_mask", "softmax_weights", "heads", "divisibility")


def full(report, task_ids):
    return all(report.tasks[task].score == report.tasks[task].max_score for task in task_ids)


@pytest.mark.each_level
@pytest.mark.parametrize("name", ["memory_tree", "huge_output"])
def test_resource_attacks_cost_only_their_own_task(attacked_class, name):
    report = attacked_class[name]
    assert report.tasks["sdpa"].score == 0
    assert full(report, UNTOUCHED_TASKS)


@needs_namespaces
def test_an_oversized_attention_py_is_refused_at_once_with_its_size(tmp_path):
    source = REFERENCE + "\n" + "# padding\n" * 400_000
    report = grade_submission(tmp_path, "huge", source)
    assert report.score == 0 and FlagKind.REFUSED in {flag.kind for flag in report.flags}
    assert "MB" in report.tests[0].message


@needs_namespaces
def test_an_exception_with_a_giant_class_name_costs_its_tests_and_grows_no_report(tmp_path):
    """The scan refuses the attack first today (its class is built by three-argument type()): this is the
    wall behind it, the worker's and the grader's bounds on what a reply can carry."""
    assert scan(redteam_submission("giant_type_name"))
    report = grade_submission(tmp_path, "giant_type_name", redteam_submission("giant_type_name"), "all",
                              behind_the_scan=True)
    assert report.score == report.max_score and report.bonus_score < report.bonus_max_score
    assert max(len(test.message) for test in report.tests) < 20_000
    assert len(json.dumps(report.pytest_json)) < 2_000_000


def test_a_compressed_frame_is_refused_before_it_is_unpacked():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", b"\0" * 1_000_000)
    with pytest.raises(wire.ProtocolError, match="compressed"):
        wire.decode(buffer.getvalue())


def test_a_frame_that_would_unpack_past_the_limit_is_refused():
    frame = wire.encode({"value": b"x" * 1000})
    with pytest.raises(wire.ProtocolError, match="more than 10 bytes"):
        wire.check_archive(frame, limit=10)


def test_a_string_past_the_limit_is_cut_where_the_message_is_read():
    message = wire.decode(wire.encode({"error": {"type": "E" * (wire.MAX_TEXT + 5), "bases": ["ValueError"]}}))
    assert len(message["error"]["type"]) < wire.MAX_TEXT + 50 and message["error"]["type"].endswith("5 characters cut)")


def test_a_message_whose_non_tensor_part_passes_its_limit_is_refused():
    with pytest.raises(wire.ProtocolError, match="besides its tensors"):
        wire.decode(wire.encode({"type": "E" * (wire.MAX_PICKLE + 1)}))
