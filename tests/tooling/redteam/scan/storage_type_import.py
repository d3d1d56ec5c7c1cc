"""A red team's attack, appended to the reference (solutions/attention.py) when it was graded."""

import sys



# --- attack (public names only): UntypedStorage.type(str) is torch._utils._type, which runs
# _import_dotted_name(str): the import builtin on any module name, then getattr along the dots.
try:
    torch.UntypedStorage(0).type("this")          # importing `this` prints the Zen of Python
except AttributeError as _e:
    print("ATTACK(a) import-by-name ran; it stopped at:", _e, file=sys.stderr)
