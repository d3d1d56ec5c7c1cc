"""Red team attack, appended to the reference: wraps torch.ao.nn.quantizable.MultiheadAttention behind the lab's attribute names."""

class MultiHeadAttention(nn.Module):
    """torch's own multi-head attention (torch.ao.nn.quantizable.MultiheadAttention, plain float mode),
    wearing the lab's attribute names."""

    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        _check_n_heads(d_model, n_heads)
        if d_model % n_heads != 0:
            raise DimensionMismatchError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        from torch.ao.nn.quantizable import MultiheadAttention as _TorchMHA
        self.d_model, self.n_heads = d_model, n_heads
        self.inner = _TorchMHA(d_model, n_heads, bias=bias)  # batch_first=True is broken in torch's module
        self.w_q, self.w_k, self.w_v, self.w_o = (self.inner.linear_Q, self.inner.linear_K,
                                                  self.inner.linear_V, self.inner.out_proj)

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        key = query if key is None else key
        value = key if value is None else value
        _check_mha_inputs(query, key, value, self.d_model)
        B, Tq, Tk, H = query.size(0), query.size(1), key.size(1), self.n_heads
        additive = torch.zeros(B, H, Tq, Tk, dtype=query.dtype)
        if mask is not None:
            additive = additive + (torch.zeros((), dtype=query.dtype).masked_fill(~mask, float("-inf"))
                                   if mask.dtype == torch.bool else mask)
        if is_causal:
            additive = additive.masked_fill(~torch.ones(Tq, Tk, dtype=torch.bool).tril(), float("-inf"))
        out, weights = self.inner(query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1),
                                  attn_mask=additive.reshape(B * H, Tq, Tk), need_weights=True,
                                  average_attn_weights=False)
        return out.transpose(0, 1), weights
