"""Fresh mistake in causal_mask, appended to the reference: causal_mask builds one arange on the CPU whatever the device
Verdict on 2 Dec: SILENT (full public marks); now caught publicly by test_causal_mask_on_the_meta_device."""

def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    rows = torch.arange(seq_len, device=device).unsqueeze(-1)
    cols = torch.arange(seq_len)
    return (cols <= rows.cpu()).to(device)
