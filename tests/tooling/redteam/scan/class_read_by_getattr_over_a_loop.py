"""getattr(x, name) with name a loop variable over the literal "__class__" is checked as an attribute only, not by the class-of rule, so it hands out type(C) (the builtin type) to keep and call with three arguments."""


class C:
    pass


for attribute in ("__class__",):
    T = getattr(C, attribute)
print("kept:", T, "| T is type:", T is type(C))
u = "_" * 2


def finalizer(self):
    print("runtime-named", u + "del" + u, "called by Python")


Built = T("Built", (), {u + "del" + u: finalizer})
obj = Built()
del obj
