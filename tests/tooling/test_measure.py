"""submission.measure(fn, *args): a call's value and its Measurement, read from the call itself."""

import pytest
import torch

from grader.sandbox.proxy import Submission

PROBE = """
def scale_in_place(x, factor):
    x.mul_(factor)
    return x.sum()


def product(a, b):
    return a @ b
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


def test_measure_refuses_a_target_that_is_not_part_of_the_submission(submission):
    with pytest.raises(TypeError, match="target must be a function, class or object of the submission"):
        submission.measure(torch.matmul, torch.ones(2, 2), torch.ones(2, 2))
