"""A name bound by an import and rebound by assignment in the same scope still counts as imported-only (symtable's is_imported hides the assignment), so `type(C) == nn` hands type to an own __eq__."""
from torch import nn


class Grab:
    got = None

    def __eq__(self, other):
        Grab.got = other
        return False

    def __hash__(self):
        return 0


class C:
    pass


nn = Grab()
type(C) == nn
T = Grab.got
print("grabbed:", T, T is type(C))
u = "_" * 2


def finalizer(self):
    print("runtime-named", u + "del" + u, "called by Python")


Built = T("Built", (), {u + "del" + u: finalizer})
obj = Built()
del obj
