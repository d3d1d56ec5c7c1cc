"""Red team attack, appended to the reference: a dunder set on a module by a key made at run time (nn.ParameterDict
turns keys into attribute names), the first step of copy.copy calling an instance's own __reduce_ex__."""

import copy as _copy

import torch as _torch

_U = "_" * 2
_CARRIER = _torch.nn.ParameterDict()
_CARRIER[_U + "reduce_ex" + _U] = lambda protocol: (dict, ())
_copy.copy(_CARRIER)
