"""torch.amp.grad_scaler.Enum is enum.Enum reached by an attribute chain the Enum rule does not recognise, so its functional API builds a class with a run-time-named __invert__ that Python invokes."""
import torch

u = "_" * 2


def hooked(self):
    print("runtime-named", u + "invert" + u, "called by Python on", self)
    return 42


Built = torch.amp.grad_scaler.Enum("Built", [("a", 1), (u + "invert" + u, hooked)])
print("result of ~Built.a:", ~Built.a)
