"""The wire format between the test process and the worker (grader.sandbox.wire) gives back what was sent:
each plain value with its type, and each tensor with its dtype, sizes, strides, device and values. (What it
refuses is in test_attacks_on_resources.py.)"""

import math

import pytest
import torch

from grader.sandbox import wire

PLAIN = [None, True, False, 0, -5, 2 ** 70, -(2 ** 80), 1.5, float("-inf"), 1 + 2j, "héllo \udcff", b"\0ab",
         [1, (2, 3)], (), {"a": 1, "b": [None]}, torch.Size([2, 3]), torch.float16, torch.device("meta"),
         slice(1, None, 2), Ellipsis]
TENSORS = {
    "contiguous": torch.randn(3, 4),
    "transposed": torch.randn(3, 4).t(),
    "offset_view": torch.randn(4, 4)[1:],
    "bool": torch.tensor([True, False, True]),
    "empty": torch.zeros(0, 3),
    "complex": torch.randn(2, 3, dtype=torch.complex64),
    "bfloat16": torch.randn(5, dtype=torch.bfloat16),
    "int64": torch.arange(6).reshape(2, 3),
    "scalar": torch.tensor(3.5, dtype=torch.float64),
    "conjugated": torch.randn(3, dtype=torch.complex128).conj(),
    "requires_grad": torch.randn(2, 2, requires_grad=True),
    "view_of_a_storage_of_odd_length": torch.arange(3, dtype=torch.uint8)[:2].view(torch.int16),
}


def round_trip(value):
    return wire.decode(wire.encode(value))


@pytest.mark.parametrize("value", PLAIN, ids=repr)
def test_a_plain_value_comes_back_equal_and_of_its_type(value):
    back = round_trip(value)
    assert type(back) is type(value) and back == value


def test_nan_comes_back_nan():
    assert math.isnan(round_trip(float("nan")))


@pytest.mark.parametrize("name", TENSORS)
def test_a_tensor_comes_back_with_its_dtype_sizes_strides_offset_and_values(name):
    tensor = TENSORS[name]
    back = round_trip(tensor)
    assert (back.dtype, back.shape, back.stride(), back.storage_offset(), back.requires_grad) == \
           (tensor.dtype, tensor.shape, tensor.stride(), tensor.storage_offset(), tensor.requires_grad)
    assert torch.equal(back.detach(), tensor.detach().resolve_conj())


def test_an_expanded_tensor_comes_back_with_its_values_in_storage_of_its_own():
    tensor = torch.arange(3.0).expand(4, 3)
    back = round_trip(tensor)
    assert torch.equal(back, tensor) and back.untyped_storage().nbytes() == back.numel() * back.element_size()


def test_a_meta_tensor_comes_back_on_the_meta_device_without_data_and_with_its_offset():
    tensor = torch.empty(5, 6, device="meta")[2:]
    back = round_trip(tensor)
    assert (back.device.type, back.shape, back.stride(), back.storage_offset()) == ("meta", (3, 6), (6, 1), 12)


def test_a_value_of_another_type_is_not_sent():
    with pytest.raises(TypeError, match="cannot be sent"):
        wire.encode({"value": object()})


def test_a_dict_with_keys_other_than_str_is_not_sent():
    with pytest.raises(TypeError, match="keys other than str"):
        wire.encode({1: "one"})
