"""Fresh mistake in causal_mask, appended to the reference: causal_mask: ignores the device argument (always CPU)"""

def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    return torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
