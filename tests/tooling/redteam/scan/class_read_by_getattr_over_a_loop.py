"""getattr(x, name) with name a loop variable over the literal "__class__" is checked as an attribute only, not by the class-of rule, so it hands out type(C) (the builtin type) to keep and call with three arguments."""


class C:
    pass


for attribute in ("__class__",):
    T = getattr(C, attribute)
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
