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

    def words(self, causal=True):
        """The configuration in words, for a failure message (causal: whether is_causal is part of it)."""
        dims = (f"B={self.batch}{' (batch 1)' if self.batch == 1 else ''}, H={self.heads}"
                f"{' (one head)' if self.heads == 1 else ''}, Tq={self.q_len}, Tk={self.k_len}, d={self.d}, "
                f"dv={self.dv}, {str(self.dtype).replace('torch.', '')}")
        if self.mask is None:
            mask = "no mask"
        else:
            mask = (f"a {self.mask} mask of shape [{', '.join(self.mask_shape.split())}] passed "
                    f"{'by position' if self.positional else 'by keyword'}"
                    + (", with a query row whose keys are all blocked" if self.blocked_row else ""))
        return f"{dims}, {mask}" + (f", is_causal={self.is_causal}" if causal else "")

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


def run_all(name, cases, check, causal=True):
    """check(case) for each case in turn; the first failure names its configuration (case.words()) in words."""
    import pytest

    from tests.support.feedback import fail

    for number, case in enumerate(cases, 1):
        try:
            check(case)
        except pytest.fail.Exception as failure:
            fail(f"{name}, configuration {number} of {len(cases)} ({case.words(causal)}):\n{failure.msg}")


def check_sdpa(submission, case, salt):
    """scaled_dot_product_attention on one configuration, against torch's."""
    from tests.support import oracle
    from tests.support.feedback import call, compare_pair, unpack_pair

    q, k, v, mask = case.tensors(salt=salt)
    label = f"scaled_dot_product_attention(q, k, v{', mask' if mask is not None else ''}, is_causal={case.is_causal})"
    if mask is not None and case.positional:
        result = call(submission.scaled_dot_product_attention, label, q, k, v, mask, case.is_causal)
    else:
        result = call(submission.scaled_dot_product_attention, label, q, k, v, mask=mask, is_causal=case.is_causal)
    compare_pair(unpack_pair(result, label), oracle.sdpa(q, k, v, mask=case.for_oracle(mask), is_causal=case.is_causal),
                 label)


def check_weights(submission, case, salt):
    """attention_weights(scores [B, H, Tq, Tk], mask) on one configuration, against torch's."""
    from tests.support import oracle
    from tests.support.feedback import assert_close, call

    q, _, _, mask = case.tensors(salt=salt)
    scores = inputs.randn(case.batch, case.heads, case.q_len, case.k_len, dtype=case.dtype, salt=salt + 3) * 3
    label = f"attention_weights(scores{', mask' if mask is not None else ''})"
    if mask is None:
        got = call(submission.attention_weights, label, scores)
    elif case.positional:
        got = call(submission.attention_weights, label, scores, mask)
    else:
        got = call(submission.attention_weights, label, scores, mask=mask)
    assert_close(got, oracle.softmax_weights(scores, case.for_oracle(mask)), label, ("b", "h", "i", "j"))
