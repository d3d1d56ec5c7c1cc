"""Red team attack, appended to the reference: tries torch's attention through routes the guard might not know (_C._nn, flex, vmap, compile)."""

def _route_probe():
    import sys, math, traceback
    import torch.nn.functional as F
    g = sys.modules["grader.sandbox.guard"]
    q = torch.randn(2, 2, 4, 8); k = torch.randn(2, 2, 5, 8); v = torch.randn(2, 2, 5, 8)
    ref = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), -1) @ v
    def jit_route():
        fn = torch.jit.script(lambda a, b, c: torch.nn.functional.scaled_dot_product_attention(a, b, c))
        return fn(q, k, v)
    def flex():
        from torch.nn.attention.flex_attention import flex_attention
        return flex_attention(q, k, v)
    def vmap_route():
        return torch.func.vmap(lambda a, b, c: F.scaled_dot_product_attention(a, b, c))(q, k, v)
    def masked_softmax():
        s = q @ k.transpose(-2, -1) / math.sqrt(8)
        return torch._masked_softmax(s, torch.zeros_like(s, dtype=torch.bool), -1, None) @ v
    def mps_math():
        return torch.ops.aten._scaled_dot_product_attention_math_for_mps(q, k, v)[0]
    def overrideable():
        return torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v)[0]
    def c_nn():
        return torch._C._nn.scaled_dot_product_attention(q, k, v)
    def encoder_fast():
        layer = torch.nn.TransformerEncoderLayer(16, 2, batch_first=True).eval()
        with torch.no_grad():
            return layer(torch.randn(2, 4, 16))
    def fresh_mhaf():
        import importlib.util, types
        spec = importlib.util.spec_from_file_location("_fresh_functional", F.__file__)
        mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
        orig = mod.multi_head_attention_forward
        glb = dict(orig.__globals__); glb["has_torch_function"] = lambda *a: False
        fn = types.FunctionType(orig.__code__, glb, "mhaf", orig.__defaults__, orig.__kwdefaults__)
        x = torch.randn(4, 2, 16)
        w = torch.randn(48, 16); b = torch.zeros(48); ow = torch.randn(16, 16); ob = torch.zeros(16)
        return fn(x, x, x, 16, 2, w, b, None, None, False, 0.0, ow, ob, training=False, need_weights=True,
                  average_attn_weights=False)[0]
    def compiled():
        return torch.compile(lambda a, b, c: torch.softmax(a @ b.transpose(-2, -1), -1) @ c)(q, k, v)
    def tbrq():
        return torch._transform_bias_rescale_qkv(torch.randn(2, 4, 48), torch.zeros(48), 2)[0]
    def memmove():
        import ctypes
        a = ctypes.create_string_buffer(b"hello"); b = ctypes.create_string_buffer(5)
        ctypes.memmove(b, a, 5); return b.raw
    out = []
    for name, route in [("jit.script sdpa", jit_route), ("flex_attention", flex), ("vmap sdpa", vmap_route),
                        ("_masked_softmax", masked_softmax), ("sdpa_math_for_mps", mps_math),
                        ("fused_overrideable", overrideable), ("_C._nn sdpa", c_nn),
                        ("TransformerEncoderLayer eval", encoder_fast), ("fresh F.mha_forward", fresh_mhaf),
                        ("torch.compile", compiled), ("_transform_bias_rescale_qkv", tbrq),
                        ("ctypes.memmove", memmove)]:
        try:
            with g.watch() as st:
                r = route()
            ok = "ran"
            if isinstance(r, torch.Tensor) and r.shape == ref.shape:
                ok += f" close={torch.allclose(r, ref, atol=1e-5)}"
        except BaseException as e:
            ok = f"raised {type(e).__name__}: {str(e)[:70]}"
        out.append(f"{name}: {ok} | forbidden={sorted(set(st.forbidden))[:2]} refused={sorted(set(st.refused))[:2]} ops={st.op_count}")
    return "\n".join(out)

print("ROUTES\n" + _route_probe())
