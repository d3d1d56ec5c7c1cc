"""Round 6, appended to the reference: the bonus functions raise an exception whose class name has millions of
characters (4 million in the attack; 500 thousand here, within the message limit, so that
the cut, not the refusal, is what is tested). Its reply (the name uncut), the test process's copies and pytest-json-report's longreprs grew the test
process by hundreds of MB and the signed report line to hundreds of MB, which the grader read quadratically: the
core kept 100 while the grading held a slot until --timeout."""

_Giant = type("E" * 500_000, (ValueError,), {"__qualname__": "E"})


def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    raise _Giant("no tiles")


def decode_step(mha, x_t, cache):
    raise _Giant("no decoding")
