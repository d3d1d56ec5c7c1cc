"""Fresh mistake in sdpa, appended to the reference: ScaledDotProductAttention.forward takes is_causal before mask
Verdict on 2 Dec: SILENT (full public marks); now caught publicly (a mask by position reaches is_causal)."""

class ScaledDotProductAttention(nn.Module):
    def forward(self, query, key, value, is_causal=False, mask=None):
        return scaled_dot_product_attention(query, key, value, mask=mask, is_causal=is_causal)
