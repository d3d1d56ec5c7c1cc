"""numbers.ABCMeta (a restricted module's listed name skips the reserved-name check) is a metaclass whose three-argument call builds a class with a __del__ made from strings at run time."""
import numbers

meta = numbers.ABCMeta
print("metaclass:", meta.__name__, isinstance(meta, type(meta)), issubclass(meta, type(int)))
print("and the builtin type, its base:", meta.mro(meta)[1], meta.mro(meta)[1](1))
u = "_" * 2
name = u + "del" + u


def finalizer(self):
    print("runtime-named method", name, "called by Python on", self)


Built = meta("Built", (), {name: finalizer})
obj = Built()
del obj
