"""setattr(torch, name, Grab()) with name a loop variable over a literal is not counted as an attribute the file sets, so `type(C) == torch.holder` counts as class-vs-class and hands the builtin type to an own __eq__."""
import torch


class Grab:
    got = None

    def __eq__(self, other):
        Grab.got = other
        return False

    def __hash__(self):
        return 0


class C:
    pass


for name in ("holder",):
    setattr(torch, name, Grab())
type(C) == torch.holder
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
