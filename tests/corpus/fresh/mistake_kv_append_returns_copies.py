"""Fresh mistake in kv_cache, appended to the reference: KVCache.append returns clones of the stored positions
Verdict on 2 Dec: SILENT (full public marks); now caught publicly by test_append_returns_views_of_the_buffers."""

_reference_append = KVCache.append


def _append_returning_copies(self, k, v):
    keys, values = _reference_append(self, k, v)
    return keys.clone(), values.clone()


KVCache.append = _append_returning_copies
