"""Calling tiled_attention, and the multiply-adds its matrix products do."""

from tests.support import oracle
from tests.support.feedback import assert_close, call_measured, fail

OUT_DIMS = ("b", "h", "i", "c")
HINT = ("for each key block: m_new = max(m, block row max); l = exp(m - m_new) * l + sum(exp(s - m_new)); "
        "acc = exp(m - m_new) * acc + exp(s - m_new) @ v_block; m = m_new; at the end acc / l")

# NaN in a tiled softmax has causes of its own: a key block in which all of a row's keys are blocked leaves the
# running max at -inf, and exp(-inf - (-inf)) is NaN; a row with no key at all ends with l = 0.
NAN_ADVICE = ("in a tiled softmax, NaN comes from exp(m - m_new) or exp(s - m_new) while m_new is still -inf (a key "
              "block in which all of this row's keys are blocked: -inf - (-inf) = NaN): where m_new is -inf, subtract "
              "0 instead; and a row with no allowed key at all ends with l = 0: give it zeros, never acc / 0.")


def assert_close_tiled(got, expected, text, *args, **kwargs):
    """assert_close on tiled_attention's output, a NaN explained by the tiled softmax's own causes."""
    assert_close(got, expected, text, *args, nan_advice=NAN_ADVICE, **kwargs)


def run_measured(submission, text, *args, **kwargs):
    """The submission's tiled_attention output, which must be one tensor, not (output, weights); and the
    call's Measurement."""
    got, measured = call_measured(submission, submission.tiled_attention, text, *args, hint=HINT, **kwargs)
    if isinstance(got, (tuple, list)):
        fail(f"{text} returned a {type(got).__name__} of {len(got)} items; it returns the output tensor only "
             "(the whole point is that the weights matrix never exists).")
    return got, measured


def run(submission, text, *args, **kwargs):
    """The submission's tiled_attention output (see run_measured)."""
    return run_measured(submission, text, *args, **kwargs)[0]


def multiply_adds_without_and_with_causal(submission, q, k, v, block_size=64):
    """The multiply-adds of tiled_attention's matrix products, without and with is_causal; each call's
    output must equal torch's (work done for a wrong result earns nothing)."""
    counts = []
    for causal in (False, True):
        text = f"tiled_attention(q, k, v, is_causal={causal}, block_size={block_size})"
        got, measured = run_measured(submission, text, q, k, v, is_causal=causal, block_size=block_size)
        counts.append(measured.multiply_adds)
        assert_close_tiled(got, oracle.output(q, k, v, is_causal=causal), text, OUT_DIMS, hint=HINT)
    return tuple(counts)
