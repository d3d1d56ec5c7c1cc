"""An own class's __eq__ (an allowed dunder) receives type(C) from a comparison the scanner allows, handing out the builtin type, whose three-argument call then builds a class with a run-time-named __del__."""


class Grab:
    got = None

    def __eq__(self, other):
        Grab.got = other
        return False

    def __hash__(self):
        return 0


class C:
    pass


Grab() == type(C)      # allowed: a class "compared"
T = Grab.got
print("grabbed:", T, "| T is type:", T is type(C))
print("T(1) ->", T(1))
u = "_" * 2


def finalizer(self):
    print("runtime-named", u + "del" + u, "called by Python")


Built = T("Built", (), {u + "del" + u: finalizer})
obj = Built()
del obj
