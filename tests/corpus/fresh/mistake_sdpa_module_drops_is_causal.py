"""Fresh mistake in sdpa, appended to the reference: ScaledDotProductAttention.forward does not pass is_causal on (function itself is correct)"""

class ScaledDotProductAttention(nn.Module):
    """Module form of scaled_dot_product_attention (no parameters, no dropout)."""

    def forward(self, query, key, value, mask=None, is_causal=False):
        return scaled_dot_product_attention(query, key, value, mask=mask)
