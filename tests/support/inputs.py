"""Seeded inputs: every test builds its tensors from its own seed, so every run sees the same data."""

import torch

SEED = 20261129


def generator(salt=0):
    return torch.Generator().manual_seed(SEED + salt)


def randn(*shape, dtype=torch.float32, salt=0):
    return torch.randn(*shape, generator=generator(salt), dtype=dtype)


def qkv(lead=(2, 3), q_len=5, k_len=5, d=8, dv=None, dtype=torch.float32, salt=0):
    """q [*lead, Tq, d], k [*lead, Tk, d], v [*lead, Tk, dv] from one seed."""
    g = generator(salt)
    q = torch.randn(*lead, q_len, d, generator=g, dtype=dtype)
    k = torch.randn(*lead, k_len, d, generator=g, dtype=dtype)
    v = torch.randn(*lead, k_len, dv or d, generator=g, dtype=dtype)
    return q, k, v


def random_bool_mask(*shape, keep=0.6, salt=0):
    """A bool mask (True = allowed) where every row keeps at least its first key."""
    mask = torch.rand(*shape, generator=generator(salt)) < keep
    mask[..., 0] = True
    return mask


def additive_mask(bool_mask, dtype=torch.float32, salt=0):
    """A float mask: -inf where blocked; where allowed, 0.0 for about a third of the keys and small finite
    offsets for the others."""
    g = generator(salt)
    offsets = torch.randn(bool_mask.shape, generator=g, dtype=dtype) * 0.5
    zero = torch.rand(bool_mask.shape, generator=g) < 0.35
    return offsets.masked_fill(zero, 0.0).masked_fill(~bool_mask, float("-inf"))


def padding_mask(lengths, k_len):
    """[B, 1, 1, Tk] bool: True for the first lengths[b] keys of batch item b."""
    positions = torch.arange(k_len)
    return (positions[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]
