"""Fresh mistake in efficiency, appended to the reference: attention_weights zeroes the fully blocked rows one at a time
Verdict on 2 Dec: SILENT (full public marks); now caught publicly by test_sdpa_with_blocked_rows_runs_the_same_operations."""

def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    blocked = torch.isneginf(scores).all(dim=-1)
    safe = scores.masked_fill(blocked.unsqueeze(-1), 0.0)
    weights = torch.softmax(safe, dim=-1)
    for index in blocked.nonzero().tolist():
        weights = weights.index_put(tuple(torch.tensor([i]) for i in index), weights.new_zeros(()))
    return weights
