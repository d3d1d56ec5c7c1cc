"""The toy lab's hidden tests: the same rules on other inputs."""

import pytest
import torch


@pytest.mark.task("norm")
@pytest.mark.points(30)
def test_norm_of_a_batch_of_batches(submission):
    x = torch.randn(2, 3, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(submission.norm(x), torch.linalg.vector_norm(x, dim=-1))


@pytest.mark.task("normalize")
@pytest.mark.points(20)
def test_normalize_of_a_batch_of_batches(submission):
    x = torch.randn(2, 2, 5, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(submission.normalize(x), x / torch.linalg.vector_norm(x, dim=-1, keepdim=True))


@pytest.mark.task("cosine")
@pytest.mark.points(5)
def test_cosine_matches_torchs(submission):
    a, b = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(6))
    torch.testing.assert_close(submission.cosine(a, b), torch.nn.functional.cosine_similarity(a, b, dim=-1))
