"""Fresh mistake in mha, appended to the reference: MultiHeadAttention.forward turns a float mask into a bool one
Verdict on 2 Dec: SILENT (full public marks); now caught publicly by test_mha_keeps_a_float_mask_additive."""

_reference_mha_forward = MultiHeadAttention.forward


def _forward_with_bool_mask(self, query, key=None, value=None, mask=None, is_causal=False):
    if mask is not None and mask.dtype != torch.bool:
        mask = mask == 0
    return _reference_mha_forward(self, query, key, value, mask, is_causal)


MultiHeadAttention.forward = _forward_with_bool_mask
