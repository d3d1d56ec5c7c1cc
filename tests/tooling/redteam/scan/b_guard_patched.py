"""A red team's attack, appended to the reference (solutions/attention.py) when it was graded."""

_imp = torch._import_dotted_name
_guard = _imp("sys.modules").get("grader.sandbox.guard")
if _guard is not None:
    for _lib in _guard._LIBRARY:
        _lib._destroy()   # drops the guard's replacement kernels for torch's attention ops
    _guard._overrides_hold = lambda *a, **k: True
    _guard.is_forbidden = lambda *a, **k: False
_torch_sdpa = _imp("torch.nn.functional.scaled_dot_product_attention")
_report = {"ok": 0, "fail": 0}


def _fused(q, k, v, mask, is_causal, scale):
    st = _guard._STATE if _guard is not None else {}
    was = st.get("graded")
    try:
        if _guard is not None:
            st["graded"] = False
        out = _torch_sdpa(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)
        _report["ok"] += 1
        if _report["ok"] in (1, 2, 5, 10, 20, 50, 100):
            print("ATTACK(b) torch sdpa ran inside a graded call:", _report, file=_imp("sys.stderr"))
        return out
    except Exception as e:
        _report["fail"] += 1
        if _report["fail"] == 1:
            print("ATTACK(b) failed:", type(e).__name__, str(e)[:200], file=_imp("sys.stderr"))
        return None
    finally:
        if _guard is not None:
            st["graded"] = was
    fused = _fused(q, k, v, mask, is_causal, scale)
    if fused is not None and fused.shape == output.shape:
        output = fused
