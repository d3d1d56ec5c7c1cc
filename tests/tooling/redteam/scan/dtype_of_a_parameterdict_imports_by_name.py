"""A ParameterDict built from a dict literal {"dtype": "this"} has a string .dtype that the file never assigns as an attribute, so storage.type(d.dtype) passes the `.type(x.dtype)` rule and imports the module named by that string."""
import torch

holder = torch.nn.ParameterDict({"dtype": "this"})
print("holder.dtype is", repr(holder.dtype))
try:
    torch.UntypedStorage(1).type(holder.dtype)
except Exception as error:
    print("after importing `this`:", type(error).__name__, error)
