"""A class statement named __torch_function__ inside a Tensor subclass defines a dunder outside the lab's list (class names are not checked), so torch calls it (instantiating it) for every torch function on the subclass, and its __bool__ makes allclose say True."""
import torch


class Sneaky(torch.Tensor):
    class __torch_function__:
        def __init__(self, func, types, args=(), kwargs=None):
            print("nested-class torch-function hook called by torch for", func.__name__)

        def __bool__(self):
            return True


out = torch.zeros(3).as_subclass(Sneaky)
print("allclose(zeros, ones) ->", bool(torch.allclose(out, torch.ones(3))))
