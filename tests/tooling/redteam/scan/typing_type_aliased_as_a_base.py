"""typing.Type bound to another name first (Base = typing.Type) is not recognised as typing.Type when used as a class base, so the class is a metaclass whose three-argument call builds a class with a run-time-named __del__."""
import typing

Base = typing.Type


class Meta(Base):
    pass


print("Meta's bases:", [base.__name__ for base in Meta.mro(Meta)])
u = "_" * 2


def finalizer(self):
    print("runtime-named", u + "del" + u, "called by Python")


Built = Meta("Built", (), {u + "del" + u: finalizer})
obj = Built()
del obj
