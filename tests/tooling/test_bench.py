"""make bench compares like with like: every timed implementation computes the same causal attention."""

import pytest
import torch

from instructor import bench
from tests import reference

SHAPE = (2, 3, 16, 8)  # B, H, T, d
ATTENTION = [name for name in bench.IMPLEMENTATIONS if name != bench.NEW_TENSOR]


@pytest.fixture(scope="module")
def qkv():
    return bench.qkv(*SHAPE)


@pytest.fixture(scope="module")
def expected(qkv):
    return reference.sdpa(*qkv, is_causal=True)


@pytest.mark.parametrize("name", ATTENTION)
def test_each_implementation_gives_torchs_causal_output(name, qkv, expected):
    function, returns_weights = bench.IMPLEMENTATIONS[name]
    result = function(*qkv)
    output = result[0] if returns_weights else result
    torch.testing.assert_close(output, expected[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", [name for name in ATTENTION if bench.IMPLEMENTATIONS[name][1]])
def test_returned_weights_are_torchs_causal_weights(name, qkv, expected):
    _, weights = bench.IMPLEMENTATIONS[name][0](*qkv)
    torch.testing.assert_close(weights, expected[1], atol=1e-5, rtol=1e-5)


def test_the_allocation_row_creates_one_tensor_of_the_weights_size(qkv):
    largest, peak = bench.memory_of(lambda: bench.IMPLEMENTATIONS[bench.NEW_TENSOR][0](*qkv))
    batch, heads, length, _ = SHAPE
    assert largest == peak == batch * heads * length * length * 4


def test_the_reference_creates_two_weight_sized_tensors_and_torch_none(qkv):
    batch, heads, length, _ = SHAPE
    weights_bytes = batch * heads * length * length * 4
    _, reference_peak = bench.memory_of(lambda: bench.IMPLEMENTATIONS["reference"][0](*qkv))
    _, torch_peak = bench.memory_of(lambda: bench.IMPLEMENTATIONS["torch SDPA"][0](*qkv))
    assert 2 * weights_bytes <= reference_peak < 3 * weights_bytes
    assert torch_peak < weights_bytes
