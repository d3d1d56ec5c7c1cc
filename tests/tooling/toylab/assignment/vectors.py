"""Toy lab: norms of vectors, from tensor operations."""

import torch


def norm(x: torch.Tensor) -> torch.Tensor:
    """The Euclidean norm over the last dimension: [..., n] -> [...]."""
    raise NotImplementedError("norm: not implemented yet")


def normalize(x: torch.Tensor) -> torch.Tensor:
    """x divided by its norm over the last dimension: [..., n] -> [..., n]."""
    raise NotImplementedError("normalize: not implemented yet")


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity over the last dimension: [..., n], [..., n] -> [...]."""
    raise NotImplementedError("cosine: not implemented yet")
