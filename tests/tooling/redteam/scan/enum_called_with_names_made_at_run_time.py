"""enum.Enum's functional API puts (name, value) pairs made at run time into a new class's namespace, so a function lands there as a dunder method (__invert__, __getattr__-like hooks) that Python then invokes."""
import enum

u = "_" * 2


def hooked(self):
    print("runtime-named", u + "invert" + u, "called by Python on", self)
    return 42


Built = enum.Enum("Built", [("a", 1), (u + "invert" + u, hooked)])
print("result of ~Built.a:", ~Built.a)
