"""A submission's use of resources costs only its own tests: memory in a tree of processes, a flood of output,
an exception with a giant class name, an oversized attention.py, and the worker's messages (crafted to claim more
than they carry, or too large) are bounded, never the grader's nor a classmate's problem."""

import io
import json
import struct

import pytest
import torch

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


def tensor_frame(sizes: tuple[int, ...], data: bytes) -> bytes:
    """A frame holding one float32 tensor on the CPU with these sizes, contiguous strides and these bytes."""
    strides = [1] * len(sizes)
    for dim in range(len(sizes) - 2, -1, -1):
        strides[dim] = strides[dim + 1] * sizes[dim + 1]

    def text(value: bytes) -> bytes:
        return struct.pack("<I", len(value)) + value

    return (wire.MAGIC + b"X" + text(b"torch.float32") + text(b"cpu") + struct.pack("<I", len(sizes))
            + struct.pack(f"<{2 * len(sizes) + 1}q", *sizes, *strides, 0) + b"\0" + text(data))


def test_a_tensor_whose_sizes_reach_past_its_bytes_is_refused():
    with pytest.raises(wire.ProtocolError):
        wire.decode(tensor_frame((1000,), b"\0" * 16))


def test_a_tensor_that_claims_elements_without_bytes_is_refused_before_anything_is_allocated():
    with pytest.raises(wire.ProtocolError, match="without its data"):
        wire.decode(tensor_frame((2 ** 40,), b""))


def test_a_frame_in_another_format_is_refused():
    archive = io.BytesIO()
    torch.save({"ok": True}, archive)  # what the worker sent before the grader had a format of its own
    with pytest.raises(wire.ProtocolError, match="not a frame of this grader"):
        wire.decode(archive.getvalue())


def test_a_frame_nested_past_the_interpreters_depth_is_refused():
    with pytest.raises(wire.ProtocolError):
        wire.decode(wire.MAGIC + b"L\1\0\0\0" * 100_000 + b"N")


def test_a_string_past_the_limit_is_cut_where_the_message_is_read():
    message = wire.decode(wire.encode({"error": {"type": "E" * (wire.MAX_TEXT + 5), "bases": ["ValueError"]}}))
    assert len(message["error"]["type"]) < wire.MAX_TEXT + 50 and message["error"]["type"].endswith("5 characters cut)")


def test_a_message_whose_non_tensor_part_passes_its_limit_is_refused():
    with pytest.raises(wire.ProtocolError, match="besides its tensors"):
        wire.decode(wire.encode({"type": "E" * (wire.MAX_STRUCTURE + 1)}))
