import functools
import torch

def g(x):
    pass

u = "_" * 2
g.__annotations__ = {"x": "(S := " + u + "import" + u + "('sys')) and int"}
functools.singledispatch(print).register(g)
print("reached:", S, len(S.modules))
