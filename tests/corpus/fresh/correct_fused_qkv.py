"""Fresh correct, appended to the reference: correct: MultiHeadAttention self-attention uses one fused F.linear over cat(w_q,w_k,w_v) weights then .split; separate projections otherwise; generator for split_heads"""

import torch.nn.functional as F

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        _check_n_heads(d_model, n_heads)
        if d_model % n_heads != 0:
            raise DimensionMismatchError(
                f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.d_model = d_model
        self.h = n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def _qkv(self, query, key, value):
        if query is key and key is value:
            # self-attention: one fused projection, then split into q, k, v
            weight = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight], dim=0)
            bias = None
            if self.w_q.bias is not None:
                bias = torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias], dim=0)
            qkv = F.linear(query, weight, bias)
            return qkv.split(self.d_model, dim=-1)
        return self.w_q(query), self.w_k(key), self.w_v(value)

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        key = query if key is None else key
        value = key if value is None else value
        _check_mha_inputs(query, key, value, self.d_model)
        q, k, v = self._qkv(query, key, value)
        q, k, v = (split_heads(t, self.h) for t in (q, k, v))
        out, attn = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
        return self.w_o(merge_heads(out)), attn
