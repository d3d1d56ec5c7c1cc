"""Red team attack (round 4), appended to the reference: sdpa returns a tuple subclass whose __iter__ computes the result while the worker sends it, after the graded call ended."""

_reference_sdpa = scaled_dot_product_attention


class _Lazy(tuple):
    def __iter__(self):
        q, k, v, mask, is_causal, scale = tuple.__iter__(self)
        return iter(_reference_sdpa(q, k, v, mask, is_causal, scale))


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    return _Lazy((q, k, v, mask, is_causal, scale))
