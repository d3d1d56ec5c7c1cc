"""Task `causal_mask`: causal_mask(seq_len) -> bool [T, T], True where key j <= query i."""

import pytest
import torch

from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import call, call_measured, check_built_on, check_tensor, expect_raises, fail
from tests.support.mistakes import check_causal_mask

pytestmark = pytest.mark.task("causal_mask")


@pytest.mark.points(2)
def test_causal_mask_is_the_bool_lower_triangle(submission):
    """causal_mask(6) is the bool [6, 6] lower triangle: True where key j <= query i (the diagonal included),
    False in the future (j > i)."""
    check_causal_mask(call(submission.causal_mask, "causal_mask(6)", 6), 6)


@pytest.mark.points(1)
def test_causal_mask_of_other_lengths(submission):
    """causal_mask(T) is the bool [T, T] lower triangle for T = 1, 2 and 3 as well, and causal_mask(True) raises
    ValueError (the handout's bad input: call the given _check_seq_len)."""
    for seq_len in (1, 2, 3):
        check_causal_mask(call(submission.causal_mask, f"causal_mask({seq_len})", seq_len), seq_len)
    expect_raises(lambda: submission.causal_mask(True), ValueError, "causal_mask(True)",
                  "True is not a length: a bool is not a count of positions", "call the given _check_seq_len(seq_len) "
                  "first.")


@pytest.mark.points(1)
def test_causal_mask_longer_than_1024(submission):
    """causal_mask(1031) is the bool lower triangle too: any length works, not only those of a fixed buffer."""
    check_causal_mask(call(submission.causal_mask, "causal_mask(1031)", 1031), 1031)


@pytest.mark.points(1)
def test_causal_mask_on_the_meta_device(submission):
    """causal_mask(6, device='cpu') is the lower triangle, and causal_mask(6, device='meta') a bool [6, 6] tensor on
    the meta device, built there from the start: every tensor it builds is built on `device` (none on the CPU
    moved over)."""
    check_causal_mask(call(submission.causal_mask, "causal_mask(6, device='cpu')", 6, device="cpu"), 6)
    label = "causal_mask(6, device='meta')"
    got, measured = call_measured(submission, submission.causal_mask, label, 6, device="meta")
    check_tensor(got, label, shape=(6, 6), layout="[T, T]")
    if got.device.type != "meta":
        fail(f"{label} returned a tensor on {got.device}, expected the 'meta' device.\n"
             "Likely cause: the device argument is not used: the mask was built on the default device (the CPU); "
             "pass device=device to every tensor factory (torch.ones(..., device=device), "
             "torch.arange(..., device=device)).")
    if got.dtype != torch.bool:
        fail(f"{label} has dtype {got.dtype}, expected torch.bool.")
    check_built_on(measured, label, "meta", "Likely cause: a tensor factory without device=device (torch.arange(T) "
                   "or torch.ones(T, T), then .to(device)): pass device=device to each one.")
