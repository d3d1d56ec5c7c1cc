"""Fresh mistake in kv_cache, appended to the reference: KVCache.append: advances length by 1 instead of by T_new (right for one-token decoding, wrong when several positions are appended)"""

class KVCache:
    def __init__(self, batch_size, n_heads, max_len, d_head, dtype=torch.float32, device=None):
        self.keys = torch.zeros(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
        self.values = torch.zeros(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
        self.max_len = max_len
        self.length = 0

    def append(self, k, v):
        _check_append(self, k, v)
        self.keys[:, :, self.length:self.length + k.size(2)] = k
        self.values[:, :, self.length:self.length + v.size(2)] = v
        self.length += 1
        return self.keys[:, :, :self.length], self.values[:, :, :self.length]
