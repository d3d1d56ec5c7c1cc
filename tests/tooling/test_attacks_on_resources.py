"""A submission's use of resources costs only its own tests: memory in a tree of processes, a flood of output,
an exception with a giant class name, an oversized attention.py, and the worker's messages (crafted to claim more
than they carry, or too large) are bounded, never the grader's nor a classmate's problem."""

import io
import json
import math
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


def text(value: bytes) -> bytes:
    return struct.pack("<I", len(value)) + value


def tensor_frame(sizes: tuple[int, ...], data: bytes, strides: tuple[int, ...] | None = None,
                 dtype: bytes = b"torch.float32", device: bytes = b"cpu") -> bytes:
    """A frame holding one tensor with these sizes, strides (contiguous ones by default) and bytes."""
    if strides is None:
        strides = tuple(math.prod(sizes[dim + 1:]) for dim in range(len(sizes)))
    return (wire.MAGIC + b"X" + text(dtype) + text(device) + struct.pack("<I", len(sizes))
            + struct.pack(f"<{2 * len(sizes) + 1}q", *sizes, *strides, 0) + b"\0" + text(data))


def test_a_tensor_whose_sizes_reach_past_its_bytes_is_refused():
    with pytest.raises(wire.ProtocolError):
        wire.decode(tensor_frame((1000,), b"\0" * 16))


def test_a_tensor_that_claims_elements_without_bytes_is_refused_before_anything_is_allocated():
    with pytest.raises(wire.ProtocolError, match="without its data"):
        wire.decode(tensor_frame((2 ** 40,), b""))


def test_a_view_that_repeats_its_bytes_is_refused_before_anyone_copies_it():
    """A stride of 0 makes one byte look like 2**62 elements: a clone() of that is an allocation bomb."""
    with pytest.raises(wire.ProtocolError, match="more elements than its bytes hold"):
        wire.decode(tensor_frame((2 ** 62,), b"\1", strides=(0,), dtype=b"torch.bool"))


def test_a_bool_tensor_holding_other_bytes_than_0_and_1_is_refused():
    with pytest.raises(wire.ProtocolError, match="other than 0 and 1"):
        wire.decode(tensor_frame((2,), b"\2\xff", dtype=b"torch.bool"))


def test_dict_keys_that_are_not_str_are_refused():
    """Their hashes could be made to collide (complex numbers, ints), making the dict quadratic to build."""
    frame = wire.MAGIC + b"M" + struct.pack("<I", 1) + b"C" + struct.pack("<dd", 2.0 ** 52, 1.0) + b"N"
    with pytest.raises(wire.ProtocolError, match="not a str"):
        wire.decode(frame)


def test_the_text_of_a_refusal_is_bounded():
    with pytest.raises(wire.ProtocolError) as refusal:
        wire.decode(tensor_frame((1,), b"\0" * 4, device=b"x" * 900_000))
    assert len(str(refusal.value)) < 1000


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
