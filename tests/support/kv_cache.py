"""Building a KVCache and decoding with it one token at a time, and the classic decoding slips."""

import torch

from tests.support import mha, oracle
from tests.support.feedback import call, call_measured, check_tensor
from tests.support.hypotheses import Mistakes

OUT_DIMS = ("b", "t", "f")
CACHE_DIMS = ("b", "h", "t", "e")
DECODE_HINT = ("project only x_t, split into heads, cache.append(k, v), then attend with the one query over "
               "every cached key (no mask), merge the heads and apply w_o")


def new_cache(submission, *args, **kwargs):
    text = f"KVCache({', '.join(map(str, args))}{''.join(f', {k}={v}' for k, v in kwargs.items())})"
    return call(submission.KVCache, text, *args, **kwargs)


def decode_step(submission, module, x_t, cache, text):
    """decode_step(module, x_t [B, 1, d_model], cache) on the submission, which must return [B, 1, d_model]:
    (that output, the call's Measurement)."""
    out, measured = call_measured(submission, submission.decode_step, text, module, x_t, cache, hint=DECODE_HINT)
    check_tensor(out, f"{text} output", shape=(x_t.size(0), 1, x_t.size(2)), layout="[B, 1, d_model]",
                 hint="return w_o's output only (not the weights)")
    return out, measured


def decode(submission, module, x, cache, name="x"):
    """Feed x [B, T, d_model] to decode_step one token at a time; the T outputs, concatenated: [B, T, d_model]."""
    outputs = []
    for t in range(x.size(1)):
        text = f"decode_step(mha, {name}[:, {t}:{t + 1}], cache)"
        outputs.append(decode_step(submission, module, x[:, t : t + 1], cache, text)[0])
    return torch.cat(outputs, dim=1)


def decode_mistakes(submission, params, n_heads, x):
    """{explanation: outputs} of the classic decoding slips, each a masked full forward pass, computed when a
    check reads them; none when the functions decode_step builds on are wrong (their bug, not decoding's,
    would be the cause)."""
    return Mistakes(lambda: _decode_mistakes(submission, params, n_heads, x))


def _decode_mistakes(submission, params, n_heads, x):
    if not mha.building_blocks_work(submission):
        return {}
    length = x.size(1)
    past_only = torch.ones(length, length, dtype=torch.bool).tril(-1)
    first_key_only = torch.zeros(length, length, dtype=torch.bool)
    first_key_only[:, 0] = True
    own_key_only = torch.eye(length, dtype=torch.bool)
    return {
        "the new token's own key is missing: append k and v to the cache BEFORE attending over it":
            oracle.mha_via_sdpa(params, n_heads, x, mask=past_only)[0],
        "is_causal=True with one query is top-left aligned and lets it see key 0 only: the newest token may "
        "see every cached key, so use no mask":
            oracle.mha_via_sdpa(params, n_heads, x, mask=first_key_only)[0],
        "each token attends to itself only: the cache does not keep the earlier tokens (is length advanced?)":
            oracle.mha_via_sdpa(params, n_heads, x, mask=own_key_only)[0],
    }
