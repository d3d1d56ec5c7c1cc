"""`.type(torch.NAME)` passes for any attribute chain under torch without the `own` check that `x.dtype` gets, so setattr(torch, "holder", "this") makes storage.type(torch.holder) import a module by a string name."""
import torch

setattr(torch, "holder", "this")
try:
    torch.UntypedStorage(1).type(torch.holder)
except Exception as error:
    print("after importing `this`:", type(error).__name__, error)
