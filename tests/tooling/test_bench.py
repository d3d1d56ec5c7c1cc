"""make bench compares like with like: every timed implementation computes the same causal attention."""

import pytest
import torch

from grader.paths import SOLUTIONS
from instructor.bench import measure, report
from instructor.bench.cli import OUT_MD
from instructor.bench_grade import BEGIN, END
from instructor.figures import load_attention
from tests.support import oracle

SHAPE = (2, 3, 16, 8)  # B, H, T, d
IMPLEMENTATIONS = measure.implementations(load_attention(SOLUTIONS))
ATTENTION = [name for name in IMPLEMENTATIONS if name != measure.NEW_TENSOR]


@pytest.fixture(scope="module")
def qkv():
    return measure.qkv(*SHAPE)


@pytest.fixture(scope="module")
def expected(qkv):
    return oracle.sdpa(*qkv, is_causal=True)


@pytest.mark.parametrize("name", ATTENTION)
def test_each_implementation_gives_torchs_causal_output(name, qkv, expected):
    function, returns_weights = IMPLEMENTATIONS[name]
    result = function(*qkv)
    output = result[0] if returns_weights else result
    torch.testing.assert_close(output, expected[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", [name for name in ATTENTION if IMPLEMENTATIONS[name][1]])
def test_returned_weights_are_torchs_causal_weights(name, qkv, expected):
    _, weights = IMPLEMENTATIONS[name][0](*qkv)
    torch.testing.assert_close(weights, expected[1], atol=1e-5, rtol=1e-5)


def test_the_allocation_row_creates_one_tensor_of_the_weights_size(qkv):
    largest, peak = measure.memory_of(lambda: IMPLEMENTATIONS[measure.NEW_TENSOR][0](*qkv))
    batch, heads, length, _ = SHAPE
    assert largest == peak == batch * heads * length * length * 4


def test_the_reference_creates_one_weight_sized_tensor_and_torch_none(qkv):
    """Under no_grad (as the bench runs) the reference's softmax writes the weights over its own scores."""
    batch, heads, length, _ = SHAPE
    weights_bytes = batch * heads * length * length * 4
    _, reference_peak = measure.memory_of(lambda: IMPLEMENTATIONS["reference"][0](*qkv))
    _, torch_peak = measure.memory_of(lambda: IMPLEMENTATIONS["torch SDPA"][0](*qkv))
    assert weights_bytes <= reference_peak < 2 * weights_bytes
    assert torch_peak < weights_bytes



def row(name):
    return {"name": name, "ms": 1.0, "ratio": 1.0, "largest_mib": 1.0, "peak_mib": 1.0, "weights": False}


def test_rewriting_the_page_keeps_the_grading_section(tmp_path):
    page = tmp_path / "benchmarks.md"
    grading = f"{BEGIN}\n## What grading costs\n{END}\n"
    page.write_text("# an older page\n\n" + grading)
    lab = {"4 KiB pages": [row(name) for name in IMPLEMENTATIONS]}
    sweep = {4096: [row(name) for name in ATTENTION]}
    decode = [{"length": length, "cached_ms": 1.0, "uncached_ms": 2.0, "speedup": 2.0} for length in (256, 2048)]
    env = {"torch": "2", "python": "3", "cpu": "cpu", "cores": 2, "threads": 2, "load": 0.0, "thp": "1", "date": "today"}
    report.write_page(page, env, lab, sweep, decode, report.summary(lab, sweep, decode), quick=True)
    text = page.read_text()
    assert text.startswith("# Benchmarks\n") and text.endswith("\n\n" + grading)


def test_the_committed_page_carries_the_grading_sections_markers():
    text = OUT_MD.read_text()
    assert BEGIN in text and END in text, "docs/benchmarks.md lost bench-grade's markers: make bench would drop its section"
