"""A memberless Enum subclass's own classmethod calls `cls` (the Enum class, under a parameter name the Enum rule does not follow) with names, so the functional API builds a class with a run-time-named __invert__ that Python invokes."""
import enum

u = "_" * 2


def hooked(self):
    print("runtime-named", u + "invert" + u, "called by Python on", self)
    return 42


class Base(enum.Enum):
    @classmethod
    def build(cls, name, pairs):
        return cls(name, pairs)


Built = Base.build("Built", [("a", 1), (u + "invert" + u, hooked)])
print("result of ~Built.a:", ~Built.a)
