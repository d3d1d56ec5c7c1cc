"""A match capture pattern in a class body (case __del__:) binds a dunder outside the lab's list to an own function without a Name node, so Python calls it as the finalizer."""


def finalizer(self):
    print("finalizer bound by a capture pattern, called by Python on", self)


class Finalized:
    match finalizer:
        case __del__:
            pass


obj = Finalized()
del obj
