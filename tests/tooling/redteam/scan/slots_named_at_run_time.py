"""A __slots__ entry made from strings at run time puts a dunder (__invert__) in a class's dictionary, and copy.dispatch_table lets copy.copy fill that slot by its run-time name, so Python calls the student's function as ~obj."""
import copy

u = "_" * 2
name = u + "invert" + u


class Slotted:
    __slots__ = (name,)


def hooked():
    print("runtime-named", name, "called by Python")
    return 42


def reducer(obj):
    return (Slotted, (), (None, {name: hooked}))


copy.dispatch_table[Slotted] = reducer
obj = copy.copy(Slotted())
print("~obj ->", ~obj)
