"""Fresh mistake in kv_cache, appended to the reference: append returns the whole preallocated buffers, empty positions too"""

class KVCache:
    """The keys and values of the positions decoded so far, for one attention layer.

    Attributes:
        keys, values: preallocated buffers, [B, H, max_len, d_head]; positions 0 .. length - 1
            are filled.
        length: how many positions are stored.
        max_len: the buffers' capacity.
    """

    def __init__(self, batch_size, n_heads, max_len, d_head, dtype=torch.float32, device=None):
        self.batch_size, self.n_heads, self.d_head = batch_size, n_heads, d_head
        self.max_len = max_len
        self.length = 0
        self.keys = torch.zeros(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
        self.values = torch.zeros(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)

    def append(self, k, v):
        """Store new positions' keys and values; return those of every position stored so far.

        Args:
            k, v: [B, H, T_new, d_head], the new positions (T_new = 1 when decoding).

        Returns:
            (keys, values), each [B, H, length, d_head] (length counts the new positions): views of
            the buffers, not copies. ValueError when k or v does not fit the buffers or the cache is full.
        """
        _check_append(self, k, v)
        t = k.size(2)
        self.keys[:, :, self.length:self.length + t] = k
        self.values[:, :, self.length:self.length + t] = v
        self.length += t
        return self.keys, self.values
