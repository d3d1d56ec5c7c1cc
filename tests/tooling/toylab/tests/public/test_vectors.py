"""The toy lab's public tests: one task a test, values against torch's own."""

import pytest
import torch


@pytest.mark.task("norm")
@pytest.mark.points(30)
def test_norm_is_the_euclidean_norm_of_the_last_dimension(submission):
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(submission.norm(x), torch.linalg.vector_norm(x, dim=-1))


@pytest.mark.task("normalize")
@pytest.mark.points(20)
def test_normalize_gives_unit_vectors_in_the_same_direction(submission):
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(submission.normalize(x), x / torch.linalg.vector_norm(x, dim=-1, keepdim=True))


@pytest.mark.task("cosine")
@pytest.mark.points(5)
def test_cosine_of_a_vector_with_itself_is_one(submission):
    x = torch.randn(2, 6, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(submission.cosine(x, x), torch.ones(2))
