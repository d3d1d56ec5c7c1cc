"""torch.__all__ (an allowed dunder, a plain list) can hold an own object, and `type(C) in torch.__all__` (compared with an imported value) hands type to that object's __eq__."""
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


torch.__all__.append(Grab())
type(C) in torch.__all__
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
