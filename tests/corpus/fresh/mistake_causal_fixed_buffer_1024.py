"""Fresh mistake in causal_mask, appended to the reference: causal_mask slices a fixed 1024-long buffer (wrong past T = 1024)
Verdict on 2 Dec: SILENT (full public marks); now caught publicly by test_causal_mask_longer_than_1024."""

_CAUSAL_BUFFER = torch.ones(1024, 1024, dtype=torch.bool).tril()


def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    return _CAUSAL_BUFFER[:seq_len, :seq_len].to(device)
