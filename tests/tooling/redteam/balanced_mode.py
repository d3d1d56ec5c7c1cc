"""Not an attack, appended to the reference: a torch function mode of the student's own, entered and left inside the call (allowed), and torch.set_default_device at import (torch's own mode, allowed)."""

from torch.overrides import TorchFunctionMode

torch.set_default_device("cpu")


class _Passthrough(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


_reference_scores = attention_scores


def attention_scores(q, k, scale=None):
    with _Passthrough():
        return _reference_scores(q, k, scale)
