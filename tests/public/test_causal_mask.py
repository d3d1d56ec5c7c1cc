"""Task `causal_mask`: causal_mask(seq_len) -> bool [T, T], True where key j <= query i."""

import pytest
import torch

from tests.feedback import check_tensor, fail

pytestmark = pytest.mark.task("causal_mask")


def first_difference(got, expected):
    i, j = (got != expected).nonzero()[0].tolist()
    return i, j


@pytest.mark.points(1)
def test_causal_mask_is_a_bool_t_by_t_matrix(submission):
    """causal_mask(6) is a bool tensor of shape [6, 6]."""
    got = submission.causal_mask(6)
    check_tensor(got, "causal_mask(6)", shape=(6, 6), layout="[T, T]")
    if got.dtype != torch.bool:
        fail(f"causal_mask(6) has dtype {got.dtype}, expected torch.bool (True = allowed). "
             "Hint: torch.ones(T, T, dtype=torch.bool).tril(), or compare with `> 0`.")


@pytest.mark.points(2)
def test_causal_mask_allows_the_past_and_the_diagonal(submission):
    """Every key j <= i is allowed (True) for query i, the query's own position included."""
    got = submission.causal_mask(6)
    check_tensor(got, "causal_mask(6)", shape=(6, 6))
    past = torch.ones(6, 6, dtype=torch.bool).tril()
    blocked_past = past & ~got.bool()
    if blocked_past.any():
        i, j = blocked_past.nonzero()[0].tolist()
        only_diagonal = torch.equal(got.bool(), past.tril(-1))
        hint = ("the diagonal must be allowed: a token attends to itself (use tril(), not tril(-1))"
                if only_diagonal else
                "True marks ALLOWED keys (the past and the diagonal: tril); is your mask inverted (triu)?")
        fail(f"causal_mask(6)[{i}, {j}] is False, but query {i} may see key {j} (j <= i).\nHint: {hint}")


@pytest.mark.points(2)
def test_causal_mask_blocks_the_future(submission):
    """Every key j > i is blocked (False) for query i."""
    got = submission.causal_mask(6)
    check_tensor(got, "causal_mask(6)", shape=(6, 6))
    future = ~torch.ones(6, 6, dtype=torch.bool).tril()
    leaks = future & got.bool()
    if leaks.any():
        i, j = leaks.nonzero()[0].tolist()
        fail(f"causal_mask(6)[{i}, {j}] is True, but key {j} is in query {i}'s future (j > i).\n"
             "Hint: True marks ALLOWED keys; the allowed part is the lower triangle (tril), not triu.")
