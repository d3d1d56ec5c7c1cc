"""A comprehension in a class body was counted as part of the class's scope, so its getattr(f, name) looked like a
read of the class's loop over literals; in Python a comprehension is a scope of its own that skips class-body
names, and name is the module's: a string made at run time, here __globals__."""
U = "_" * 2
slot = U + "globals" + U


def helper(x):
    return x


class Reach:
    for slot in ("weight",):
        pass
    found = [getattr(f, slot) for f in (helper,)][0]
