"""Fresh correct, appended to the reference: correct: scores / d ** 0.5 after matmul, ScaledDotProductAttention submodule (with optional scale) used inside MHA, heads split/merged inline with view/transpose"""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    s = q @ k.transpose(-2, -1)
    if scale is None:
        return s / q.size(-1) ** 0.5
    return s * scale

class ScaledDotProductAttention(nn.Module):
    """Module form of scaled_dot_product_attention (no parameters, no dropout)."""

    def __init__(self, scale=None):
        super().__init__()
        self.scale = scale

    def forward(self, query, key, value, mask=None, is_causal=False):
        return scaled_dot_product_attention(query, key, value, mask, is_causal, self.scale)

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        _check_n_heads(d_model, n_heads)
        if d_model % n_heads != 0:
            raise DimensionMismatchError(
                f"n_heads={n_heads} does not divide d_model={d_model}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.attention = ScaledDotProductAttention()

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        key = key if key is not None else query
        value = value if value is not None else key
        _check_mha_inputs(query, key, value, self.d_model)
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        q = self.w_q(query).view(B, Tq, self.n_heads, self.d_head).transpose(1, 2)
        k = self.w_k(key).view(B, Tk, self.n_heads, self.d_head).transpose(1, 2)
        v = self.w_v(value).view(B, Tk, self.n_heads, self.d_head).transpose(1, 2)
        out, attn = self.attention(q, k, v, mask=mask, is_causal=is_causal)
        out = out.transpose(1, 2).reshape(B, Tq, self.d_model)
        return self.w_o(out), attn
