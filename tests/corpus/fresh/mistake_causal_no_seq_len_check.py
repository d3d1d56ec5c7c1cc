"""Fresh mistake in causal_mask, appended to the reference: causal_mask: does not call _check_seq_len, so causal_mask(True) / negative / float seq_len do not raise ValueError"""

def causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()
