"""Fresh mistake in causal_mask, appended to the reference: causal_mask: tril(diagonal=-1), so the diagonal is blocked (a token cannot see itself); sdpa's is_causal is separate and correct"""

def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril(diagonal=-1)
