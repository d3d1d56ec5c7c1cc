"""Fresh mistake in divisibility, appended to the reference: the split_heads message is a % format given a tuple
Verdict on 2 Dec: WRONG CAUSE ("raise that class, not TypeError"); now "building the DimensionMismatchError failed"."""

_reference_split_heads = split_heads


def split_heads(x, n_heads):
    d_model = x.size(-1)
    if _is_int(n_heads) and n_heads > 0 and d_model % n_heads != 0:
        raise DimensionMismatchError("d_model=%d is not divisible by n_heads" % (d_model, n_heads))
    return _reference_split_heads(x, n_heads)
