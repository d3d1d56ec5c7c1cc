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
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
