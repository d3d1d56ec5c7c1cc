"""A dataclass field annotated enum.Enum (an Enum class is allowed as an annotation) is handed out by dataclasses.fields(D)[0].type, and its functional API then builds a class with a run-time-named __invert__ that Python invokes."""
from dataclasses import dataclass, fields
import enum


@dataclass
class Holder:
    kind: enum.Enum = None


maker = fields(Holder)[0].type
u = "_" * 2


def hooked(self):
    print("runtime-named", u + "invert" + u, "called by Python on", self)
    return 42


Built = maker("Built", [("a", 1), (u + "invert" + u, hooked)])
print("result of ~Built.a:", ~Built.a)
