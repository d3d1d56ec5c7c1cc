import functools

u = "_" * 2


class Box:
    got = {}

    def __setattr__(self, key, value):
        Box.got[key] = value


def peek(obj, name):
    # functools.update_wrapper reads getattr(wrapped, name) for every name in `assigned`
    functools.update_wrapper(Box(), obj, assigned=(name,), updated=())
    return Box.got[name]


g = peek(peek, u + "globals" + u)
b = g[u + "builtins" + u]
imp = b[u + "import" + u] if isinstance(b, dict) else peek(b, u + "import" + u)
S = imp("sys")
print("update_wrapper getattr reached:", S, len(peek(S, "modules")))
