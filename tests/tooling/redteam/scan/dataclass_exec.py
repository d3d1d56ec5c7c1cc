import dataclasses

u = "_" * 2
# dataclasses pastes field names, unchecked, into the source of the __eq__ it execs
name = "a,)\n import sys; print('reached via dataclasses exec:', sys, len(sys.modules))\n def g(self):\n  return (self.a"
C = type("C", (), {u + "annotations" + u: {name: int}, u + "doc" + u: "C"})
dataclasses.dataclass(C, init=False, repr=False, eq=True)
