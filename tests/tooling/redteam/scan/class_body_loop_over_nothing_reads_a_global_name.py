"""A class body's loop over an empty tuple of literals was taken as the only binding of its name, so getattr(x,
name) was let through, but the loop never runs and the class body reads the module's name: a string made at run
time, here __globals__."""
U = "_" * 2
slot = U + "globals" + U


def helper(x):
    return x


class Reach:
    for slot in ():
        pass
    found = getattr(helper, slot)
