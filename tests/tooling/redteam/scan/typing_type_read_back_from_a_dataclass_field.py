"""typing.Type (allowed in annotations) leaves the annotation through dataclasses.fields(D)[0].type, is stored on torch by setattr (a literal name the scan does not count as the file's own), and as the base torch.maker it makes a metaclass whose three-argument call builds a class with a run-time-named __del__."""
from dataclasses import dataclass, fields
import typing
import torch


@dataclass
class Holder:
    kind: typing.Type[object] = int


setattr(torch, "maker", fields(Holder)[0].type)


class Meta(torch.maker):
    pass


print("Meta's mro:", Meta.mro(Meta), "| the builtin type:", Meta.mro(Meta)[1](1))
u = "_" * 2


def finalizer(self):
    print("runtime-named", u + "del" + u, "called by Python")


Built = Meta("Built", (), {u + "del" + u: finalizer})
obj = Built()
del obj
