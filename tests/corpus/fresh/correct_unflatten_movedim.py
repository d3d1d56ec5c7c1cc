"""Fresh correct, appended to the reference: correct: unflatten+movedim split, movedim+flatten merge, projections via F.linear with the modules' weight/bias"""

import torch.nn.functional as F

def split_heads(x, n_heads):
    d_model = x.shape[-1]
    _check_n_heads(d_model, n_heads)
    if d_model % n_heads != 0:
        raise DimensionMismatchError(
            f"n_heads={n_heads} must divide d_model={d_model} (remainder {d_model % n_heads})")
    return x.unflatten(-1, (n_heads, d_model // n_heads)).movedim(-2, 1)

def merge_heads(x):
    return x.movedim(1, -2).flatten(-2)

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        _check_n_heads(d_model, n_heads)
        if d_model % n_heads:
            raise DimensionMismatchError(f"d_model={d_model} % n_heads={n_heads} != 0")
        self.d_model, self.num_heads = d_model, n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        if key is None:
            key = query
        if value is None:
            value = key
        _check_mha_inputs(query, key, value, self.d_model)
        q = F.linear(query, self.w_q.weight, self.w_q.bias)
        k = F.linear(key, self.w_k.weight, self.w_k.bias)
        v = F.linear(value, self.w_v.weight, self.w_v.bias)
        heads, weights = scaled_dot_product_attention(
            split_heads(q, self.num_heads), split_heads(k, self.num_heads),
            split_heads(v, self.num_heads), mask=mask, is_causal=is_causal)
        out = F.linear(merge_heads(heads), self.w_o.weight, self.w_o.bias)
        return out, weights
