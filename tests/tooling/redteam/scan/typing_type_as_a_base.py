"""A class statement with base typing.Type (an allowed name) subclasses the builtin type through __mro_entries__, giving a metaclass whose three-argument call builds a class with a run-time-named __del__."""
import typing


class Meta(typing.Type):
    pass


print("Meta's bases:", [base.__name__ for base in Meta.mro(Meta)])
builtin_type = Meta.mro(Meta)[1]
print("builtin type reached:", builtin_type, builtin_type(1))
u = "_" * 2


def finalizer(self):
    print("runtime-named", u + "del" + u, "called by Python")


Built = Meta("Built", (), {u + "del" + u: finalizer})
print("Built's metaclass is Meta:", isinstance(Built, Meta))
obj = Built()
del obj
