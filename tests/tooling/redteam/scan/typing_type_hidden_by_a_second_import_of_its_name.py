"""The scan keeps one (module, name) per imported name over all scopes, so `from typing import Any as Base` in an unused function, read after the module's `from typing import Type as Base`, hides that Base is typing.Type, and class Meta(Base) is a metaclass whose three-argument call builds a class with a run-time-named __del__."""
def unused():
    from typing import Any as Base
    return Base


from typing import Type as Base


class Meta(Base):
    pass


print("Meta's mro:", Meta.mro(Meta))
u = "_" * 2


def finalizer(self):
    print("runtime-named", u + "del" + u, "called by Python")


Built = Meta("Built", (), {u + "del" + u: finalizer})
obj = Built()
del obj
