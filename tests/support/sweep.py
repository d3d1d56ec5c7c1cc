"""Seeded sweeps over the handout's input space: a few configurations drawn from every combination of batch 1 or
more, one head or more, Tq = 1 or Tq != Tk, non-power-of-two sizes, no mask or a bool or float mask of each
broadcast shape (passed by position or by keyword), is_causal, float32 and float64, and rows with no allowed key.
A failure names the first failing configuration in words. Small on purpose: each configuration is one call.

The public and hidden suites draw their configurations with different seeds: the hidden one re-checks the same
rules on other inputs."""

import itertools
import random
from dataclasses import dataclass

import torch

from tests.support import inputs

# Every mask shape the handout says broadcasts to [..., Tq, Tk] (B, H, Tq, Tk as letters).
MASK_SHAPES = ("Tk", "Tq Tk", "B 1 1 Tk", "B 1 Tq Tk", "1 H Tq Tk", "B H Tq Tk")


@dataclass(frozen=True)
class Config:
    batch: int
    heads: int
    q_len: int
    k_len: int
    d: int
    dv: int
    dtype: torch.dtype
    mask: str | None  # None, "bool" or "float"
    mask_shape: str  # one of MASK_SHAPES
    positional: bool  # the mask passed by position (else by keyword)
    is_causal: bool
    blocked_row: bool  # one query row with no allowed key

    def words(self):
        """The configuration in words, for a failure message."""
        dims = (f"B={self.batch}{' (batch 1)' if self.batch == 1 else ''}, H={self.heads}"
                f"{' (one head)' if self.heads == 1 else ''}, Tq={self.q_len}, Tk={self.k_len}, d={self.d}, "
                f"dv={self.dv}, {str(self.dtype).replace('torch.', '')}")
        if self.mask is None:
            mask = "no mask"
        else:
            mask = (f"a {self.mask} mask of shape [{', '.join(self.mask_shape.split())}] passed "
                    f"{'by position' if self.positional else 'by keyword'}"
                    + (", with a query row whose keys are all blocked" if self.blocked_row else ""))
        return f"{dims}, {mask}, is_causal={self.is_causal}"

    def for_oracle(self, mask):
        """The mask as torch's SDPA takes it: at least [Tq, Tk] (it refuses a 1-D float mask)."""
        return mask if mask is None or mask.dim() >= 2 else mask.expand(self.q_len, self.k_len)

    def tensors(self, salt):
        """q, k, v [B, H, T, ...] and the mask (None, bool or float, of mask_shape), from one seed."""
        q, k, v = inputs.qkv(lead=(self.batch, self.heads), q_len=self.q_len, k_len=self.k_len, d=self.d,
                             dv=self.dv, dtype=self.dtype, salt=salt)
        if self.mask is None:
            return q, k, v, None
        sizes = {"B": self.batch, "H": self.heads, "Tq": self.q_len, "Tk": self.k_len, "1": 1}
        shape = [sizes[name] for name in self.mask_shape.split()]
        allowed = inputs.random_bool_mask(*shape, salt=salt + 1)
        if self.blocked_row and len(shape) >= 2 and shape[-2] > 1:
            allowed[..., shape[-2] - 1, :] = False  # the last query sees no key
        if self.mask == "bool":
            return q, k, v, allowed
        return q, k, v, inputs.additive_mask(allowed, dtype=self.dtype, salt=salt + 2)


def configs(seed, count):
    """count configurations drawn (seeded) from the whole space, so that every feature appears."""
    space = list(itertools.product(
        ((1, 1), (2, 3), (1, 3), (3, 1)),  # (B, H): batch 1, one head, both, neither
        ((1, 7), (5, 7), (6, 3), (5, 5)),  # (Tq, Tk): one query, fewer / more queries than keys, square
        ((5, 6), (12, 3)),  # (d, dv), never powers of two
        (torch.float32, torch.float64),
        (None, "bool", "float"),
        MASK_SHAPES,
        (True, False),  # positional
        (False, True),  # is_causal
        (False, True),  # blocked row
    ))
    rng = random.Random(seed)
    chosen = rng.sample(space, count)
    # every mask shape, bool and float, position and keyword at least once, whatever the draw
    for n, shape in enumerate(MASK_SHAPES):
        pick = list(chosen[n])
        pick[4], pick[5], pick[6] = ("bool", "float")[n % 2], shape, bool(n % 3)
        chosen[n] = tuple(pick)
    return [Config(bh[0], bh[1], lengths[0], lengths[1], dims[0], dims[1], dtype, mask, shape,
                   positional, causal, blocked and mask is not None)
            for bh, lengths, dims, dtype, mask, shape, positional, causal, blocked in chosen]


def run_all(name, cases, check):
    """check(case) for each case in turn; the first failure names its configuration (case.words()) in words."""
    import pytest

    from tests.support.feedback import fail

    for number, case in enumerate(cases, 1):
        try:
            check(case)
        except pytest.fail.Exception as failure:
            fail(f"{name}, configuration {number} of {len(cases)} ({case.words()}):\n{failure.msg}")
