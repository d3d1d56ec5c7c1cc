"""Red team attack (round 5), appended to the reference: a torch function mode entered at import and never left fills in the answers while the reply is pickled, after the graded call."""

from torch.overrides import TorchFunctionMode

PENDING = []


class FixUp(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if PENDING and getattr(func, "__name__", "") == "untyped_storage" and args:
            target = args[0]
            job = PENDING[0]
            want = job["shapes"]
            for index, shape in enumerate(want):
                if shape is not None and tuple(target.shape) == shape:
                    if "answer" not in job:
                        with torch.no_grad():
                            job["answer"] = job["compute"]()
                    target.copy_(job["answer"][index])
                    want[index] = None
                    if all(s is None for s in want):
                        PENDING.clear()
                    break
        return func(*args, **kwargs)


_MODE = FixUp()
_MODE.__enter__()


def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    qs, ks, vs = q.detach(), k.detach(), v.detach()
    out = v.new_zeros(*q.shape[:-1], v.size(-1))
    # one tiny matmul so that the multiply-add test sees "some" work (fewer when causal)
    n = 1 if is_causal else 40
    torch.ones(n, 1) @ torch.ones(1, 1)
    PENDING.clear()
    PENDING.append({"shapes": [tuple(out.shape)],
                    "compute": lambda: (real_sdpa(qs, ks, vs, mask=mask, is_causal=is_causal, scale=scale)[0],)})
    return out


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    if mask is not None:
        _check_mask_for(mask, q, k)
    out = v.new_zeros(*q.shape[:-1], v.size(-1))
    weights = q.new_zeros(*q.shape[:-1], k.size(-2))
    if q.requires_grad or k.requires_grad or v.requires_grad:
        return real_sdpa(q, k, v, mask=mask, is_causal=is_causal, scale=scale)
    qs, ks, vs = q.detach(), k.detach(), v.detach()
    PENDING.clear()
    PENDING.append({"shapes": [tuple(out.shape), tuple(weights.shape)],
                    "compute": lambda: real_sdpa(qs, ks, vs, mask=mask, is_causal=is_causal, scale=scale)})
    return out, weights
