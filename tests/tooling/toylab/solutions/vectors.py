"""Toy lab: norms of vectors, from tensor operations."""

import torch


def norm(x: torch.Tensor) -> torch.Tensor:
    """The Euclidean norm over the last dimension: [..., n] -> [...]."""
    return (x * x).sum(dim=-1).sqrt()


def normalize(x: torch.Tensor) -> torch.Tensor:
    """x divided by its norm over the last dimension: [..., n] -> [..., n]."""
    return x / norm(x).unsqueeze(-1)


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity over the last dimension: [..., n], [..., n] -> [...]."""
    return (normalize(a) * normalize(b)).sum(dim=-1)
