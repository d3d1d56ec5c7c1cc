import torch


def f():
    pass


u = "_" * 2
for name in ("real",):
    match u + "globals" + u:
        case name:
            pass
    g = getattr(f, name)
for name in ("real",):
    match u + "import" + u:
        case name:
            pass
    imp = getattr(g[u + "builtins" + u], name, None) or g[u + "builtins" + u][name]
S = imp("sys")
print("loop-literal getattr reached:", S, len(S.stderr and getattr(S, "maxsize") and [1]))
for name in ("real",):
    match "modules":
        case name:
            pass
    print("sys.modules:", len(getattr(S, name)))
