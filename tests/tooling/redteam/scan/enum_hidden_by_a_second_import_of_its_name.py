"""The scan keeps one (module, name) per imported name over all scopes, so `from enum import auto as Kind` in an unused function hides that the module's Kind is enum.Enum, whose functional API then builds a class with a run-time-named __invert__ that Python invokes."""
def unused():
    from enum import auto as Kind
    return Kind


from enum import Enum as Kind
u = "_" * 2


def hooked(self):
    print("runtime-named", u + "invert" + u, "called by Python on", self)
    return 42


Built = Kind("Built", [("a", 1), (u + "invert" + u, hooked)])
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
