"""Fresh correct, appended to the reference: correct: reference-style (scale q, matmul, masked_fill, row-max repair, tril, view+transpose) (every function of the lab, written anew)"""

def attention_scores(q, k, scale=None):
    _check_qk(q, k)
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(-1))
    return (q * scale) @ k.transpose(-2, -1)


def causal_mask(seq_len, device=None):
    _check_seq_len(seq_len)
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def attention_weights(scores, mask=None):
    if mask is not None:
        _check_mask(mask, scores)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    row_max = scores.amax(dim=-1, keepdim=True)
    dead = row_max == float("-inf")
    scores = scores.masked_fill(dead, 0.0)
    weights = torch.softmax(scores, dim=-1)
    return weights.masked_fill(dead, 0.0)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    in_dtype = q.dtype
    if in_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    scores = attention_scores(q, k, scale)
    if is_causal:
        tq, tk = q.size(-2), k.size(-2)
        allowed = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = attention_weights(scores, mask)
    out = weights @ v
    return out.to(in_dtype), weights.to(in_dtype)


class ScaledDotProductAttention(nn.Module):
    """Module form of scaled_dot_product_attention (no parameters, no dropout)."""

    def forward(self, query, key, value, mask=None, is_causal=False):
        return scaled_dot_product_attention(query, key, value, mask=mask, is_causal=is_causal)


def split_heads(x, n_heads):
    d_model = x.size(-1)
    _check_n_heads(d_model, n_heads)
    if d_model % n_heads != 0:
        raise DimensionMismatchError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}")
    b, t, _ = x.shape
    return x.view(b, t, n_heads, d_model // n_heads).transpose(1, 2)


def merge_heads(x):
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        _check_n_heads(d_model, n_heads)
        if d_model % n_heads != 0:
            raise DimensionMismatchError(
                f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key=None, value=None, mask=None, is_causal=False):
        if key is None:
            key = query
        if value is None:
            value = key
        _check_mha_inputs(query, key, value, self.d_model)
        q = split_heads(self.w_q(query), self.n_heads)
        k = split_heads(self.w_k(key), self.n_heads)
        v = split_heads(self.w_v(value), self.n_heads)
        out, weights = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
        return self.w_o(merge_heads(out)), weights


def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    in_dtype = q.dtype
    if in_dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    if scale is None:
        scale = 1.0 / math.sqrt(q.size(-1))
    q = q * scale
    tq, tk = q.size(-2), k.size(-2)
    lead = q.shape[:-2]
    m = q.new_full((*lead, tq, 1), float("-inf"))
    l = q.new_zeros((*lead, tq, 1))
    acc = q.new_zeros((*lead, tq, v.size(-1)))
    for s in range(0, tk, block_size):
        e = min(s + block_size, tk)
        first = s if is_causal else 0
        if first >= tq:
            break
        qb = q[..., first:, :]
        sc = qb @ k[..., s:e, :].transpose(-2, -1)
        if mask is not None:
            mb = _mask_block(mask, first, s, e)
            if mb.dtype == torch.bool:
                sc = sc.masked_fill(~mb, float("-inf"))
            else:
                sc = sc + mb
        if is_causal:
            rows = torch.arange(first, tq, device=q.device).unsqueeze(-1)
            cols = torch.arange(s, e, device=q.device)
            sc = sc.masked_fill(cols > rows, float("-inf"))
        m_old = m[..., first:, :]
        m_new = torch.maximum(m_old, sc.amax(dim=-1, keepdim=True))
        m_safe = m_new.masked_fill(m_new == float("-inf"), 0.0)
        p = torch.exp(sc - m_safe)
        rescale = torch.exp(m_old - m_safe)
        l[..., first:, :].mul_(rescale).add_(p.sum(dim=-1, keepdim=True))
        acc[..., first:, :].mul_(rescale).add_(p @ v[..., s:e, :])
        m[..., first:, :] = m_new
    out = acc / l.masked_fill(l == 0, 1.0)
    return out.to(in_dtype)


class KVCache:
    def __init__(self, batch_size, n_heads, max_len, d_head, dtype=torch.float32, device=None):
        self.keys = torch.zeros(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
        self.values = torch.zeros(batch_size, n_heads, max_len, d_head, dtype=dtype, device=device)
        self.max_len = max_len
        self.length = 0

    def append(self, k, v):
        _check_append(self, k, v)
        start = self.length
        end = start + k.size(2)
        self.keys[:, :, start:end] = k
        self.values[:, :, start:end] = v
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]


def decode_step(mha, x_t, cache):
    _check_decode_step(mha, x_t, cache)
    h = cache.keys.size(1)
    q = split_heads(mha.w_q(x_t), h)
    k = split_heads(mha.w_k(x_t), h)
    v = split_heads(mha.w_v(x_t), h)
    keys, values = cache.append(k, v)
    out, _ = scaled_dot_product_attention(q, keys, values)
    return mha.w_o(merge_heads(out))
