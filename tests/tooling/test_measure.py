"""submission.measure(fn, *args): a call's value and its Measurement, read from the call itself."""

import pytest
import torch

from grader.sandbox.proxy import Submission

PROBE = """
import torch


def scale_in_place(x, factor):
    x.mul_(factor)
    return x.sum()


def product(a, b):
    return a @ b


def product_by_broadcast(a, b, how):
    # a [4, 5] times b [5, 6], as every pair of entries multiplied then summed over the 5
    if how == "broadcast":
        return (a[:, :, None] * b[None, :, :]).sum(1)
    if how == "expand":
        return (a[:, :, None].expand(4, 5, 6) * b[None, :, :].expand(4, 5, 6)).sum(1)
    return torch.nn.functional.conv1d(a[:, :, None], b.T[:, :, None])[:, :, 0]


def built_then_moved(n, device):
    return torch.arange(n).to(device)


def write_one_position(buffer, row, how):
    # row written into position 3 of buffer [N, 8], made before the call, the way `how` names
    position = torch.tensor([3])
    if how == "index_copy_":
        buffer.index_copy_(0, position, row)
    elif how == "index_put_":
        buffer[position] = row
    elif how == "slice":
        buffer[3:4] = row
    elif how == "scatter_":
        buffer.scatter_(0, position.view(1, 1).expand(1, 8), row)
    else:
        buffer.fill_(0.0)
    return buffer[:4].sum()
"""


@pytest.fixture(scope="module")
def submission(tmp_path_factory):
    folder = tmp_path_factory.mktemp("measured")
    (folder / "attention.py").write_text(PROBE)
    submission = Submission(folder / "attention.py")
    yield submission
    submission.stop()


def test_measure_returns_the_value_and_each_argument_as_the_call_left_it(submission):
    x = torch.arange(6.0)
    value, measured = submission.measure(submission.scale_in_place, x, 3)
    assert value.item() == 45.0
    assert torch.equal(measured.args_after[0], x * 3) and measured.args_after[1] is None
    assert torch.equal(x, torch.arange(6.0)), "the caller's own tensor stays unchanged: the worker got a copy"


def test_measure_counts_the_matrix_products_and_the_largest_new_tensor(submission):
    value, measured = submission.measure(submission.product, torch.ones(4, 5), torch.ones(5, 6))
    assert torch.equal(value, torch.full((4, 6), 5.0))
    assert measured.multiply_adds == 4 * 5 * 6 and len(measured.op_shapes) == 1
    assert measured.largest_bytes == 4 * 6 * 4 and measured.op_count >= 1


@pytest.mark.parametrize("how", ["broadcast", "expand", "conv1d"])
def test_a_matrix_product_written_as_broadcast_expand_or_convolution_counts_its_multiply_adds(submission, how):
    value, measured = submission.measure(submission.product_by_broadcast, torch.ones(4, 5), torch.ones(5, 6), how)
    assert torch.equal(value, torch.full((4, 6), 5.0))
    assert measured.multiply_adds == 4 * 5 * 6


def test_measure_refuses_a_target_that_is_not_part_of_the_submission(submission):
    with pytest.raises(TypeError, match="target must be a function, class or object of the submission"):
        submission.measure(torch.matmul, torch.ones(2, 2), torch.ones(2, 2))


@pytest.mark.parametrize("how", ["index_copy_", "index_put_", "slice", "scatter_"])
def test_writing_one_position_of_a_buffer_counts_that_position_not_the_buffer(submission, how):
    """However a cache writes its new position (slice assignment, index_copy_, index_put_, scatter_), it fills
    that position's bytes: the meter does not mistake the whole buffer for a new tensor."""
    _, measured = submission.measure(submission.write_one_position, torch.zeros(1000, 8), torch.ones(1, 8), how)
    assert measured.largest_bytes < 1000 * 8 * 4 / 100


def test_filling_a_whole_buffer_counts_the_buffer(submission):
    _, measured = submission.measure(submission.write_one_position, torch.zeros(1000, 8), torch.ones(1, 8), "fill")
    assert measured.largest_bytes == 1000 * 8 * 4


def test_measure_reports_the_devices_the_call_built_tensors_on(submission):
    """A tensor built on the CPU, then moved to the device asked for, shows on both."""
    value, measured = submission.measure(submission.built_then_moved, 5, "meta")
    assert value.device.type == "meta"
    assert measured.created_on == {"cpu": 5, "meta": 5}
