"""UntypedStorage.type read as a bound method (not called in place) escapes the `.type(...)` argument rule, so calling it later with a string imports a module by name (here `this`, which prints the Zen of Python)."""
import torch

convert = torch.UntypedStorage(1).type
try:
    convert("this")
except Exception as error:
    print("after importing `this`:", type(error).__name__, error)
