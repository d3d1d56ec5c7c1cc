"""Fresh correct, appended to the reference: correct: KVCache.append writes the new positions with index_copy_ into the preallocated buffers"""

class KVCache:
    """The keys and values of the positions decoded so far, for one attention layer.

    Attributes:
        keys, values: preallocated buffers, [B, H, max_len, d_head]; positions 0 .. length - 1
            are filled.
        length: how many positions are stored.
        max_len: the buffers' capacity.
    """

    def __init__(self, batch_size, n_heads, max_len, d_head, dtype=torch.float32, device=None):
        self.max_len = max_len
        self.length = 0
        self.keys = torch.zeros((batch_size, n_heads, max_len, d_head), dtype=dtype, device=device)
        self.values = torch.zeros_like(self.keys)

    def append(self, k, v):
        """Store new positions' keys and values; return those of every position stored so far.

        Args:
            k, v: [B, H, T_new, d_head], the new positions (T_new = 1 when decoding).

        Returns:
            (keys, values), each [B, H, length, d_head] (length counts the new positions): views of
            the buffers, not copies. ValueError when k or v does not fit the buffers or the cache is full.
        """
        _check_append(self, k, v)
        t_new = k.size(2)
        positions = torch.arange(self.length, self.length + t_new, device=self.keys.device)
        self.keys.index_copy_(2, positions, k.to(self.keys.dtype))
        self.values.index_copy_(2, positions, v.to(self.values.dtype))
        self.length += t_new
        return self.keys[:, :, : self.length], self.values[:, :, : self.length]
