"""torch.nn.Module.set_submodule called unbound on an own class does setattr(cls, name, module) with a name made at run time, binding __torch_function__ (outside the lab's dunder list) to an nn.Module whose forward torch then calls for every torch function given an instance."""
import torch

u = "_" * 2
name = u + "torch_function" + u


class Hook(torch.nn.Module):
    def forward(self, func, types, args=(), kwargs=None):
        print("runtime-named", name, "called by torch for", func.__name__)
        return True


class Sneaky:
    pass


torch.nn.Module.set_submodule(Sneaky, name, Hook())
print("allclose(Sneaky(), ones) ->", torch.allclose(Sneaky(), torch.ones(3)))
