"""Task `causal_mask` (hidden): other lengths, exactness at a large T, and the device argument."""

import pytest
import torch

from tests.feedback import check_tensor, fail

pytestmark = pytest.mark.task("causal_mask")


def expected_mask(seq_len):
    return torch.ones(seq_len, seq_len, dtype=torch.bool).tril()


def check_mask(got, seq_len):
    """Fail with the first wrong entry unless got is exactly the bool [T, T] lower triangle."""
    label = f"causal_mask({seq_len})"
    check_tensor(got, label, shape=(seq_len, seq_len), layout="[T, T]")
    if got.dtype != torch.bool:
        fail(f"{label} has dtype {got.dtype}, expected torch.bool (True = allowed).\n"
             "Hint: torch.ones(T, T, dtype=torch.bool).tril(), or compare with `> 0`.")
    expected = expected_mask(seq_len)
    differ = got != expected
    if differ.any():
        i, j = differ.nonzero()[0].tolist()
        if j <= i:
            why = f"query {i} may see key {j} (j <= i), so it must be True"
            hint = ("the diagonal must be allowed: use tril(), not tril(-1)" if i == j
                    else "True marks ALLOWED keys; is the mask inverted?")
        else:
            why = f"key {j} is in query {i}'s future (j > i), so it must be False"
            hint = "True marks ALLOWED keys; the allowed part is the lower triangle (tril), not triu"
        fail(f"{label}[{i}, {j}] is {bool(got[i, j])}, but {why} ({int(differ.sum())} of {differ.numel()} "
             f"entries are wrong).\nHint: {hint}.")


@pytest.mark.points(1)
def test_causal_mask_of_length_one_is_a_single_true(submission):
    """causal_mask(1) is [[True]]: a single token attends to itself."""
    check_mask(submission.causal_mask(1), 1)


@pytest.mark.points(2)
def test_causal_mask_is_the_lower_triangle_for_several_lengths(submission):
    """causal_mask(T) equals the bool lower triangle tril(ones(T, T)) for T in (1, 2, 7, 64)."""
    for seq_len in (1, 2, 7, 64):
        check_mask(submission.causal_mask(seq_len), seq_len)


@pytest.mark.points(1)
def test_causal_mask_is_created_on_the_requested_device(submission):
    """causal_mask(T, device=...) builds the mask on that device (checked with device='meta')."""
    got = submission.causal_mask(5, device="meta")
    check_tensor(got, "causal_mask(5, device='meta')", shape=(5, 5), layout="[T, T]")
    if got.device.type != "meta":
        fail(f"causal_mask(5, device='meta') returned a tensor on {got.device}, expected the 'meta' device.\n"
             "Hint: pass device=device to the tensor factory (torch.ones(..., device=device)).")
    if got.dtype != torch.bool:
        fail(f"causal_mask(5, device='meta') has dtype {got.dtype}, expected torch.bool.")


@pytest.mark.points(1)
def test_causal_mask_is_exact_at_length_512(submission):
    """causal_mask(512) is exactly the 512 x 512 bool lower triangle."""
    check_mask(submission.causal_mask(512), 512)
