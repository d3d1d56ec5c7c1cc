"""Fresh mistake in sdpa, appended to the reference: ScaledDotProductAttention.forward defaults is_causal to True
Verdict on 2 Dec: SILENT (full marks in every suite); now caught publicly and named."""

class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, mask=None, is_causal=True):
        return scaled_dot_product_attention(query, key, value, mask=mask, is_causal=is_causal)
