"""Fresh mistake in divisibility, appended to the reference: the error message reads self.d_model before it is set
Verdict on 2 Dec: WRONG CAUSE ("raise that class, not AttributeError"); now "building the DimensionMismatchError failed"."""

class MultiHeadAttention(MultiHeadAttention):
    def __init__(self, d_model, n_heads, bias=True):
        nn.Module.__init__(self)
        _check_n_heads(d_model, n_heads)
        if d_model % n_heads != 0:
            raise DimensionMismatchError(
                f"d_model={self.d_model} is not divisible by n_heads={n_heads}"
            )
        self.d_model = d_model
        self.n_heads = n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
