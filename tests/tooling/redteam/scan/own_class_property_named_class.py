"""An own class's __class__ property (allowed dunder) makes x.__class__ a Grab whose __eq__ receives type(C) from a comparison the scanner treats as class-vs-class."""


class Grab:
    got = None

    def __eq__(self, other):
        Grab.got = other
        return False

    def __hash__(self):
        return 0


class Spoof:
    @property
    def __class__(self):
        return Grab()


class C:
    pass


type(C) == Spoof().__class__
T = Grab.got
print("grabbed:", T, T is type(C))
u = "_" * 2


def finalizer(self):
    print("runtime-named", u + "del" + u, "called by Python")


Built = T("Built", (), {u + "del" + u: finalizer})
obj = Built()
del obj
