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
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
