"""Red team attack, appended to the reference: a dataclasses.Field kept from a plain class body (no @dataclass, so
the class attribute is the Field itself), renamed to code; a dataclass built on that class pastes the name into
the __init__ source it execs. The code only records that it ran: any code could."""

import dataclasses as _dataclasses

REACHED = []


class _Plain:
    x: int = _dataclasses.field(default=0)


_FIELD = _Plain.x
_dataclasses.dataclass(_Plain)
_FIELD.name = "a=REACHED.append(1),*,b"
try:
    @_dataclasses.dataclass
    class _Child(_Plain):
        y: int = 0
except Exception:
    pass
if REACHED:
    raise RuntimeError("ATTACK RAN: a dataclass field's name ran as code")
