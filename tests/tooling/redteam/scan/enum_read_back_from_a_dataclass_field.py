"""A dataclass field annotated enum.Enum (an Enum class is allowed as an annotation) is handed out by dataclasses.fields(D)[0].type, and its functional API then builds a class with a run-time-named __invert__ that Python invokes."""
from dataclasses import dataclass, fields
import enum


@dataclass
class Holder:
    kind: enum.Enum = None
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
