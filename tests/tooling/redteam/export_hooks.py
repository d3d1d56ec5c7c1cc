"""Red team attack (round 4), appended to the reference: the work runs in the worker's export of the result, outside watch()."""

import collections
import itertools

LAZY = True


class _Pair(tuple):
    """Looks like (output, weights); its items are computed only when the worker iterates it to send it
    back (wire.walk), after watch() ended: no operation of the job reaches the counter or the meters."""

    def __iter__(self):
        compute = tuple.__getitem__(self, 0)
        return iter(compute())


class _Deferred(int):
    """A plain-looking int that the worker passes to torch.save as is: pickling it runs the job, unwatched,
    and pickles the tensor it made, so the test process receives a tensor."""

    def __reduce__(self):
        t = _JOBS[int(self)]().contiguous()
        return (torch._utils._rebuild_tensor_v2,
                (t._typed_storage(), t.storage_offset(), tuple(t.size()), t.stride(), False,
                 collections.OrderedDict()))


_JOBS = {}


def _deferred_tensor(job):
    key = len(_JOBS)
    _JOBS[key] = job
    return _Deferred(key)


def _pair_later(job):
    memo = []
    def compute():
        if not memo:
            memo.append(job())
        return memo[0]
    return _Pair((compute, None))


def _looped_sdpa(q, k, v, mask=None, is_causal=False, scale=None):
    """A Python loop over every batch and head index (exactly what the efficiency task forbids)."""
    dtype = q.dtype
    if dtype in HALF_DTYPES:
        q, k, v, mask = _in_float32(q, k, v, mask)
    lead, tq, tk = q.shape[:-2], q.size(-2), k.size(-2)
    if any(n == 0 for n in lead):
        o, w = _sdpa_vec(q, k, v, mask, is_causal, scale)
        return o.to(dtype), w.to(dtype)
    if mask is not None:
        mask = mask.expand(*lead, tq, tk)
    outs, ws = [], []
    for idx in itertools.product(*[range(n) for n in lead]):
        s = attention_scores(q[idx], k[idx], scale)
        if is_causal:
            s = s.masked_fill(~torch.ones(tq, tk, dtype=torch.bool).tril(), float("-inf"))
        w = attention_weights(s, None if mask is None else mask[idx])
        outs.append(w @ v[idx])
        ws.append(w)
    out = torch.stack(outs).reshape(*lead, tq, v.size(-1))
    wt = torch.stack(ws).reshape(*lead, tq, tk)
    return out.to(dtype), wt.to(dtype)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    if mask is not None:
        _check_mask_for(mask, q, k)
    if not LAZY:
        return _looped_sdpa(q, k, v, mask, is_causal, scale)
    return _pair_later(lambda: _looped_sdpa(q, k, v, mask, is_causal, scale))


def _looped_forward(self, query, key=None, value=None, mask=None, is_causal=False):
    key = query if key is None else key
    value = key if value is None else value
    outs, ws = [], []
    for b in range(query.size(0)):
        m = mask
        if mask is not None and mask.dim() == 4 and mask.size(0) != 1:
            m = mask[b:b + 1]
        o, w = self._forward_vec(query[b:b + 1], key[b:b + 1], value[b:b + 1], m, is_causal)
        outs.append(o)
        ws.append(w)
    return torch.cat(outs), torch.cat(ws)


def _mha_forward(self, query, key=None, value=None, mask=None, is_causal=False):
    key_ = query if key is None else key
    value_ = key_ if value is None else value
    _check_mha_inputs(query, key_, value_, self.d_model)
    if not LAZY or query.size(0) == 0:
        return _looped_forward(self, query, key, value, mask, is_causal)
    return _pair_later(lambda: _looped_forward(self, query, key, value, mask, is_causal))


MultiHeadAttention.forward = _mha_forward


def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    """Builds the full Tq x Tk matrix (no tiling at all, no causal skipping)."""
    _check_tiled(q, k, v, mask, block_size)
    if not LAZY:
        return _looped_sdpa(q, k, v, mask, is_causal, scale)[0]
    rows = 1 if is_causal else 2  # a token matrix product: the multiply-add meter sees "half" when causal
    (q[..., :rows, :] @ k[..., :1, :].transpose(-2, -1))
    return _deferred_tensor(lambda: _looped_sdpa(q, k, v, mask, is_causal, scale)[0])
