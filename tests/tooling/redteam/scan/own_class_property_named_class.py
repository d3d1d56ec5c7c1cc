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
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
