"""An import alias in a class body (from copy import copy as __index__) binds a dunder outside the lab's list without a Name node, so Python calls copy.copy(self) when the instance is used as an index."""


class Indexed:
    from copy import copy as __index__


try:
    print(range(10)[Indexed()])
except TypeError as error:
    print("Python called the aliased hook:", error)
