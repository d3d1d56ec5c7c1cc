"""typing.Type bound to another name first (Base = typing.Type) is not recognised as typing.Type when used as a class base, so the class is a metaclass whose three-argument call builds a class with a run-time-named __del__."""
import typing

Base = typing.Type


class Meta(Base):
# ... and with it, a class built at run time (the payload, cut: the scan stops at the line above)
