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
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
