"""Fresh mistake in efficiency, appended to the reference: MultiHeadAttention.forward: list comprehension over heads calling sdpa per head, then torch.stack"""

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        _check_n_heads(d_model, n_heads)
        if d_model % n_heads != 0:
            raise DimensionMismatchError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
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
        q = split_heads(self.w_q(query), self.n_heads)
        k = split_heads(self.w_k(key), self.n_heads)
        v = split_heads(self.w_v(value), self.n_heads)
        if mask is not None and mask.dim() == 4 and mask.size(1) != 1:
            masks = [mask[:, h] for h in range(self.n_heads)]
        else:
            masks = [mask] * self.n_heads
        results = [scaled_dot_product_attention(q[:, h], k[:, h], v[:, h], mask=masks[h] if masks[h] is None or masks[h].dim() < 4 else masks[h].squeeze(1), is_causal=is_causal)
                   for h in range(self.n_heads)]
        out = torch.stack([r[0] for r in results], dim=1)
        weights = torch.stack([r[1] for r in results], dim=1)
        return self.w_o(merge_heads(out)), weights
