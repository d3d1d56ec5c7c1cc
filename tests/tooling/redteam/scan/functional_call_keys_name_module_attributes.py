"""torch.func.functional_call swaps a module's tensors by its dict's keys: for a key that is no parameter or buffer
it reads getattr(module, key) and sets setattr(module, key, tensor), names made at run time (the read leaks the
attribute's text through its error)."""
import torch


class Probe(torch.nn.Module):
    def forward(self, x):
        return x


name = "_" + "ev" + "il"
torch.func.functional_call(Probe(), {name: torch.zeros(1)}, (torch.zeros(1),))
