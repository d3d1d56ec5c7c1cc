import torch

u = "_" * 2
Meta = type("Meta", (type,), {u + "instancecheck" + u: lambda c, o: True})


def dyn(obj, name):
    C = Meta("C", (), {u + "match_args" + u: (name,)})
    match obj:
        case C(val):
            return val


g = dyn(dyn, u + "globals" + u)
b = g[u + "builtins" + u]
imp = b[u + "import" + u] if isinstance(b, dict) else dyn(b, u + "import" + u)
S = imp("sys")
print("reached sys:", S, "modules:", len(dyn(S, "modules")))
def gen():
    yield 1
print("frame:", dyn(gen(), "gi_frame"), "code:", dyn(dyn, u + "code" + u))
os = imp("os")
print("os:", os.getpid())
