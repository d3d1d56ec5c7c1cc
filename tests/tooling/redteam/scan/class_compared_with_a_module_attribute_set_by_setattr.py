"""setattr(torch, "holder", Grab()) is not an attribute the file "defines", so torch.holder still counts as statically a class and its own __contains__ receives type(C)."""
import torch


class Grab:
    got = None

    def __contains__(self, item):
        Grab.got = item
        return True


class C:
    pass


setattr(torch, "holder", Grab())
type(C) in torch.holder
T = Grab.got
print("grabbed:", T, T is type(C))
u = "_" * 2


def finalizer(self):
    print("runtime-named", u + "del" + u, "called by Python")


Built = T("Built", (), {u + "del" + u: finalizer})
obj = Built()
del obj
