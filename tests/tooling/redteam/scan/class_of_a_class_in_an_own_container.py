"""Variants: `from numbers import ABCMeta` and `type(C) in Grab()` (an own __contains__ receives the class of a class)."""
from numbers import ABCMeta


class Grab:
    got = None

    def __contains__(self, item):
        Grab.got = item
        return True


class C:
    pass


print(type(C) in Grab(), Grab.got, Grab.got is type(C), ABCMeta)
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
