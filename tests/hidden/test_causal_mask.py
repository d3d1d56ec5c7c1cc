"""Task `causal_mask` (hidden): other lengths, exactness at a large T, the device argument, and bad lengths."""

import pytest
import torch

from tests.support.depends import builds_on  # noqa: F401  (autouse)
from tests.support.feedback import call, call_measured, check_built_on, check_tensor, expect_raises, fail
from tests.support.mistakes import check_causal_mask

pytestmark = pytest.mark.task("causal_mask")


@pytest.mark.points(1)
def test_causal_mask_is_the_lower_triangle_for_several_lengths(submission):
    """causal_mask(T) equals the bool lower triangle tril(ones(T, T)) for T in (1, 2, 7, 64)."""
    for seq_len in (2, 7, 1, 64):
        check_causal_mask(call(submission.causal_mask, f"causal_mask({seq_len})", seq_len), seq_len)


@pytest.mark.points(2)
def test_causal_mask_is_created_on_the_requested_device(submission):
    """causal_mask(T, device=...) is the lower triangle on that device (values checked with device='cpu',
    the device with device='meta', where every tensor it builds is built)."""
    got = call(submission.causal_mask, "causal_mask(5, device='cpu')", 5, device="cpu")
    check_causal_mask(got, 5)
    label = "causal_mask(5, device='meta')"
    got, measured = call_measured(submission, submission.causal_mask, label, 5, device="meta")
    check_tensor(got, label, shape=(5, 5), layout="[T, T]")
    if got.device.type != "meta":
        fail(f"{label} returned a tensor on {got.device}, expected the 'meta' device.\n"
             "Hint: pass device=device to the tensor factory (torch.ones(..., device=device)).")
    if got.dtype != torch.bool:
        fail(f"{label} has dtype {got.dtype}, expected torch.bool.")
    check_built_on(measured, label, "meta", "Hint: pass device=device to every tensor factory it calls.")


@pytest.mark.points(1)
def test_causal_mask_is_exact_at_length_2050(submission):
    """causal_mask(2050) is exactly the 2050 x 2050 bool lower triangle (longer than 1024: no fixed buffer)."""
    check_causal_mask(call(submission.causal_mask, "causal_mask(2050)", 2050), 2050)


@pytest.mark.points(1)
def test_causal_mask_rejects_a_length_that_is_not_a_non_negative_int(submission):
    """causal_mask(True), causal_mask(-1) and causal_mask(2.5) raise ValueError (the handout's bad input),
    and causal_mask(0) is the empty [0, 0] mask."""
    check_causal_mask(call(submission.causal_mask, "causal_mask(0)", 0), 0)
    for bad in (True, -1, 2.5):
        expect_raises(lambda bad=bad: submission.causal_mask(bad), ValueError, f"causal_mask({bad!r})",
                      f"{bad!r} is not a length: a bool is not a count of positions, and lengths are whole and >= 0",
                      "call the given _check_seq_len(seq_len) first.")
