"""What common wrong implementations return, so a failure can name the mistake ("Likely cause: ...")."""

import torch

from tests.support import hypotheses
from tests.support.feedback import check_tensor, fail


def scale_mistakes(q, k, scale=None):
    """{explanation: scores} of the known wrong attention_scores (tests/support/hypotheses.py)."""
    return hypotheses.as_mistakes("scores", q=q, k=k, scale=scale)


def explicit_scale_mistakes(q, k, scale):
    return scale_mistakes(q, k, scale)


def key_mistakes(q, k):
    return scale_mistakes(q, k)


def split_mistakes(x, n_heads):
    return hypotheses.as_mistakes("split_heads", x=x, n_heads=n_heads)


def merge_mistakes(x):
    return hypotheses.as_mistakes("merge_heads", x=x)


def causal_mask_mistakes(seq_len):
    """The causal masks a wrong tril/triu call builds, as bool [T, T] tensors."""
    ones = torch.ones(seq_len, seq_len, dtype=torch.bool)
    mistakes = {
        "the mask is the upper triangle (triu): True must mark the ALLOWED keys, the past and the diagonal: "
        "use tril()": ones.triu(),
        "the diagonal is blocked (tril(-1)): a token may attend to itself, use tril()": ones.tril(-1),
        "the mask marks the blocked future (triu(1)) instead of the allowed keys: True = allowed, use tril()":
            ones.triu(1),
    }
    # A mask that is also all True, all False or another mistake's (short lengths) names nothing for sure.
    ambiguous = [ones, ~ones]
    return {text: mask for text, mask in mistakes.items()
            if sum(torch.equal(mask, other) for other in [*ambiguous, *mistakes.values()]) == 1}


def check_causal_mask(got, seq_len):
    """Fail with the first wrong entry, and the mistake when it is a known one, unless got is exactly the
    bool [T, T] lower triangle."""
    label = f"causal_mask({seq_len})"
    check_tensor(got, label, shape=(seq_len, seq_len), layout="[T, T]")
    expected = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
    if got.dtype != torch.bool:
        same_values = not got.dtype.is_complex and torch.equal(got.to(torch.float64), expected.to(torch.float64))
        cause = (f"\nLikely cause: the mask is a 0/1 {got.dtype} matrix: build it with dtype=torch.bool "
                 "(torch.ones(T, T, dtype=torch.bool).tril())") if same_values else ""
        fail(f"{label} has dtype {got.dtype}, expected torch.bool (True = allowed).{cause}")
    differ = got != expected
    if not differ.any():
        return
    i, j = differ.nonzero()[0].tolist()
    why = (f"query {i} may see key {j} (j <= i), so it must be True" if j <= i
           else f"key {j} is in query {i}'s future (j > i), so it must be False")
    text = (f"{label}[{i}, {j}] is {bool(got[i, j])}, but {why} ({int(differ.sum())} of {differ.numel()} entries "
            "are wrong).")
    for explanation, candidate in causal_mask_mistakes(seq_len).items():
        if torch.equal(got, candidate):
            fail(f"{text}\nLikely cause: {explanation}")
    fail(f"{text}\nHint: True marks ALLOWED keys: the lower triangle with its diagonal, "
         "torch.ones(T, T, dtype=torch.bool).tril().")


def mask_mistakes(scores, mask=None):
    """{explanation: weights} of the known wrong attention_weights for this call."""
    return hypotheses.as_mistakes("weights", scores=scores, mask=mask)


float_mask_mistakes = blocked_row_mistakes = mask_mistakes


def float32_precision(expected):
    """A float64 result that is right only to float32 precision (a candidate for assert_close's mistakes)."""
    return expected, torch.float32


def as_pairs(weight_mistakes, v):
    """{text: weights} -> {text: (weights @ v, weights)}: what scaled_dot_product_attention returns then
    (computed when read)."""
    return hypotheses.Mistakes(lambda: {text: (weights @ v, weights) for text, weights in weight_mistakes.items()
                                        if isinstance(weights, torch.Tensor) and weights.dtype == v.dtype})


def sdpa_mistakes(q, k, v, mask=None, is_causal=False, scale=None):
    """{explanation: (output, weights)} of the known wrong scaled_dot_product_attention for this call."""
    return hypotheses.as_mistakes("sdpa", q=q, k=k, v=v, mask=mask, is_causal=is_causal, scale=scale)


def causal_mistakes(q, k, v):
    return sdpa_mistakes(q, k, v, is_causal=True)
