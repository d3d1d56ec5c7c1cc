"""lab/allowed-names.json from lab/allowed-use.json and the installed torch: the attribute names attention.py
may use and the names it may never use, even as its own. `python -m instructor allowed-names` writes it; a
tooling test regenerates it and fails when torch changes it, so a new torch is reviewed, not trusted.

Allowed: the public names of the policy's namespaces (torch's public API and Python's own types), less the
refused ones. Reserved (refused on any object, even where the file defines the same name, since the scan
cannot tell which object an attribute is read from): the policy's refused names, every name of torch that
says attention, and, in every module reachable from an allowed import through allowed names, each private
name and each name bound to a module or function outside that reach (sys, os, importlib, torch._C, ...).
"""

from __future__ import annotations

import argparse
import enum
import importlib
import json
import pkgutil
import re
import sys
import types
import warnings
from pathlib import Path
from typing import Any

from grader.lab import LAB
from grader.paths import REPO

NAMES_FILE = LAB.folder / "allowed-names.json"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _public(obj: object) -> set[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name for name in dir(obj) if not name.startswith("_")}


def _kernel(name: str, parts: list[str]) -> bool:
    return any(part in name.lower() for part in parts)


def _origin(value: object) -> str:
    """The module a function or class was defined in ('' where it does not say)."""
    module = getattr(value, "__module__", None)
    return module if isinstance(module, str) else ""


def restricted_names(policy: dict[str, Any]) -> dict[str, list[str]]:
    """Each restricted module's names, "*" expanded to its public names less the refused ones."""
    refused = _refused(policy)
    names = {}
    for module_name, listed in policy["modules_restricted"].items():
        if module_name == "about":
            continue
        module = importlib.import_module(module_name)
        names[module_name] = sorted(name for name in _public(module) - refused if _plain(getattr(module, name, None))) \
            if listed == "*" else list(listed)
    return names


def _plain(value: object) -> bool:
    """What "*" gives of a module: its functions, classes and constants; never a metaclass (a subclass of
    type builds classes from names made at run time: numbers.ABCMeta), a module, or a mutable registry the
    whole process reads (copy.dispatch_table is copyreg's table of pickling hooks)."""
    if isinstance(value, type):
        return not issubclass(value, type)
    return not isinstance(value, (types.ModuleType, dict, list, set, bytearray))


def _refused(policy: dict[str, Any]) -> set[str]:
    lists = policy["attributes_refused"]
    refused = {name for key in ("interpreter", "loaders", "torch_routes", "names_from_data") for name in lists[key]}
    return refused | set(policy["builtins_refused"]) | set(policy["name_calls"]["functions"])


def _reach(policy: dict[str, Any], refused: set[str]) -> tuple[dict[str, types.ModuleType], set[str]]:
    """The modules reachable from the allowed imports (torch's, through public, not refused names, and the
    restricted ones); and the names that, in one of them, bind a module outside that reach, a function or
    class that no allowed name hands out and torch did not define, a metaclass, or private state."""
    allowed = {name: importlib.import_module(name) for name in policy["modules"]}
    restricted = {name: importlib.import_module(name) for name in restricted_names(policy)}
    # A restricted module allowed whole is reached (examined, not followed) wherever torch binds it; one allowed
    # for some names is out of reach: torch's names for it are reserved, as its other names are not allowed.
    whole = {name for name, listed in policy["modules_restricted"].items() if listed == "*"}
    reached: dict[str, types.ModuleType] = {name: module for name, module in restricted.items() if name in whole}
    queue = list(allowed.values())
    while queue:
        module = queue.pop()
        if module.__name__ in reached:
            continue
        reached[module.__name__] = module
        for name, value in list(vars(module).items()):
            if isinstance(value, types.ModuleType) and not _is_private(name) and name not in refused and (
                    value.__name__ in allowed or value.__name__.startswith("torch.")) and not any(
                    map(_is_private, value.__name__.split("."))):
                queue.append(value)
    # what an allowed name of a restricted module hands out is safe wherever it is bound (torch's `warn`)
    handed_out = {id(getattr(restricted[module], name)) for module, names in restricted_names(policy).items()
                  for name in names if hasattr(restricted[module], name)}

    def outside(value: object) -> bool:
        """A module out of reach, a metaclass, or a function or class no allowed name hands out and that
        neither torch nor Python's builtins define."""
        if isinstance(value, types.ModuleType):
            return value.__name__ not in reached
        if isinstance(value, type) and issubclass(value, type) and value is not type:
            return True  # builds classes from names made at run time
        if isinstance(value, enum.EnumMeta) and not value.__members__:
            return True  # Enum("Name", names) builds a class of them: only enum's own names give it (restricted)
        return (callable(value) and id(value) not in handed_out
                and _origin(value).split(".")[0] not in ("", "torch", "builtins"))

    unsafe: set[str] = set()
    for module in reached.values():
        for name, value in list(vars(module).items()):
            if name.startswith("__"):
                continue
            if outside(value) or (_is_private(name) and module.__name__ not in restricted
                                  and (_state(value) or _below_python(value))):
                unsafe.add(name)
            if isinstance(value, (dict, list, set)) and not module.__name__.startswith("torch"):
                unsafe.add(name)  # a registry the whole process reads (copy.dispatch_table: pickling hooks)
            if isinstance(value, type):  # a class's own bindings: a module or a function of one out of reach
                unsafe |= {attribute for attribute, bound in _own(value)
                           if outside(bound) and (isinstance(bound, types.ModuleType) or _standalone(bound))}
    return reached, unsafe


def _submodule_names(module: types.ModuleType) -> list[str]:
    """A package's submodules, imported or not (torch.nn.attention.flex_attention loads on first use)."""
    return [info.name for info in pkgutil.iter_modules(getattr(module, "__path__", []))]


def _state(value: object) -> bool:
    """Whether a module's private binding is state the grader could depend on (a registry, a cache, a
    handle), not a function, class or constant of torch's, which only computes."""
    return not (callable(value) or isinstance(value, (int, float, complex, str, bytes, tuple, frozenset, type(None)))
                or type(value).__module__ in ("typing", "types"))


def _below_python(value: object) -> bool:
    """A callable of torch's C extension (torch._C and its kin): below the dispatcher the guard watches."""
    origin = _origin(value)
    return callable(value) and not isinstance(value, type) and (origin == "" or origin.startswith("torch._C"))


def _standalone(value: object) -> bool:
    """A function defined at a module's top level (os.system), not a method of some class."""
    value = getattr(value, "__func__", value)  # staticmethod, classmethod
    return "." not in str(getattr(value, "__qualname__", "."))


def _own(cls: type) -> list[tuple[str, object]]:
    try:
        return [(name, value) for name, value in vars(cls).items() if not name.startswith("__")]
    except TypeError:
        return []


def generate(policy: dict[str, Any]) -> dict[str, Any]:
    """The names file's content: {torch, allowed, reserved}, each list sorted."""
    import torch  # noqa: F401  (the namespaces below name it)

    refused_lists = policy["attributes_refused"]
    refused = _refused(policy)
    modules = {name: importlib.import_module(name) for name in policy["modules"] if name != "__future__"}
    scope = {name.split(".")[0]: sys.modules[name.split(".")[0]] for name in modules}
    allowed: set[str] = set()
    for expression in policy["namespaces"]["expressions"]:
        value = eval(expression, scope)  # the policy's own expressions: trusted, never a student's
        allowed |= _public(value)
    reached, unsafe = _reach(policy, refused)
    torch_names = {name for module_name, module in reached.items() if module_name.split(".")[0] == "torch"
                   for name in [*vars(module), *_submodule_names(module)]}
    kernels = {name for name in torch_names | allowed if _kernel(name, refused_lists["kernel_parts"])}
    kernels -= set(refused_lists["kernel_namespaces"])
    reserved = refused | kernels | unsafe
    imports = {name: sorted(_importable(module, reserved, reached)) for name, module in modules.items()}
    return {"torch": torch.__version__, "allowed": sorted(allowed - reserved), "reserved": sorted(reserved),
            "imports": imports, "restricted": restricted_names(policy),
            "torch_private": sorted(_torch_private() | _restricted_private(policy))}


PRIVATE_IN_SOURCE = re.compile(r"""(?:\.|\bas\s+|['"])(_[A-Za-z0-9_]+)\b""")  # x._a, import y as _a, "_a"


def _restricted_private(policy: dict[str, Any]) -> set[str]:
    """Every private name that an object of a restricted module (or of what its allowed names hand out) may
    carry: what its module and classes bind, and what their source reads or writes as an attribute
    (catch_warnings() keeps the warnings module in self._module; collections binds sys as _sys)."""
    sources: set[str] = set()
    names: set[str] = set()
    for module_name, listed in restricted_names(policy).items():
        module = importlib.import_module(module_name)
        values = [module, *(getattr(module, name) for name in listed if hasattr(module, name))]
        for value in values:  # a class's attributes include its metaclass's (Enum._convert_ is EnumType's)
            names |= {name for name in (*dir(value), *dir(type(value))) if _is_private(name)}
            defined_in = sys.modules.get(_origin(value)) if not isinstance(value, types.ModuleType) else value
            path = getattr(defined_in, "__file__", None)
            if isinstance(path, str) and path.endswith(".py"):
                sources.add(path)
    for path in sorted(sources):
        names |= {name for name in PRIVATE_IN_SOURCE.findall(Path(path).read_text(encoding="utf-8"))
                  if _is_private(name)}
    return names


def _torch_private() -> set[str]:
    """Every private name torch binds: in any of its loaded modules, and in any class it defines."""
    import torch

    names: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module_name, module in list(sys.modules.items()):
            if module is None or module_name.split(".")[0] != "torch":
                continue
            for name, value in list(vars(module).items()):
                if _is_private(name):
                    names.add(name)
                if isinstance(value, type) and _origin(value).split(".")[0] == "torch":
                    owned = (*_own(value), *_own(type(value)))  # a class's attributes include its metaclass's
                    names |= {attribute for attribute, _ in owned if _is_private(attribute)}
    for cls in (torch.Tensor, torch.nn.Module):  # what they inherit from torch._C
        names |= {name for name in dir(cls) if _is_private(name)}
    return names


def _importable(module: types.ModuleType, refused: set[str], reached: dict[str, types.ModuleType]) -> set[str]:
    """What `from module import name` may take of one of torch's modules: its public names that are not
    reserved and are no module out of reach."""
    names = set()
    for name in _public(module):
        value = getattr(module, name, None)
        if isinstance(value, types.ModuleType) and value.__name__ not in reached:
            continue
        if name not in refused:
            names.add(name)
    return names


def write(path: Path = NAMES_FILE, handout: Path | None = None) -> dict[str, Any]:
    """Write the names file, and the handout's table where handout is given."""
    names = generate(LAB.policy)
    path.write_text(json.dumps(names, indent=0) + "\n")
    if handout is not None:
        handout.write_text(render_handout(handout.read_text(encoding="utf-8"), LAB.policy), encoding="utf-8")
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=NAMES_FILE, help="where to write (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    names = write(args.out, HANDOUT if args.out == NAMES_FILE else None)
    print(f"{args.out}: {len(names['allowed'])} allowed attribute names, {len(names['reserved'])} reserved "
          f"(torch {names['torch']})")
    return 0


HANDOUT = REPO / "docs" / "lab.md"
BEGIN = "<!-- BEGIN allowed-use: generated from lab/allowed-use.json by `python -m instructor allowed-names` -->"
END = "<!-- END allowed-use -->"


def _code(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def handout_table(policy: dict[str, Any]) -> str:
    """The handout's 'What you may use' table, from the same description the scan reads."""
    modules = sorted(name for name in policy["modules"] if name != "__future__")
    refused_builtins = policy["builtins_refused"]
    allowed_builtins = [name for name in policy["builtins_allowed"]["names"] if name not in ("True", "False", "None")]
    trusted = policy["builtins_allowed"]["trusted"]
    calls = policy["name_calls"]["functions"]
    refused = policy["attributes_refused"]
    dunders = [name for name in policy["dunders"] if name not in ("__main__", "__future__")]
    syntax = sorted(set(policy["syntax"]["refused"].values()))
    restricted = "; ".join(f"`{module}` (all its names)" if names == "*" else f"of `{module}` only {_code(names)}"
                           for module, names in policy["modules_restricted"].items() if module != "about")
    streams = _code([f"print(..., file={module}.{name})" for module, names in policy["print_streams"].items()
                     if module != "about" for name in names])
    rows = [
        ("imports", f"{_code(modules)} and `from __future__ import ...`; {restricted}; {streams}",
         "any other module (`numpy`, `os`, `sys`, ...), relative imports, `from ... import *`"),
        ("Python", "every ordinary statement and expression: `def`, `class`, `if`, `for`, `while`, `with`, "
                   "`try`, `match`, `lambda`, comprehensions, `global`",
         ", ".join(syntax) + "; metaclasses (`metaclass=`, `type()` with three arguments); an object's class "
         "(`type(x)`, `x.__class__`) other than read for its name, compared with `is` or a named class, given to "
         "`isinstance` or printed; a base other than a named class; `typing.Type` outside annotations; "
         "`__slots__` other than string literals; `Enum(\"Name\", names)`; a coding line other than UTF-8"),
        ("builtins", f"{_code(sorted(set(allowed_builtins) - set(calls)))}, every exception class; {_code(calls)} "
                     "as a call with a literal name: `getattr(obj, \"name\")`. A name your file binds (a parameter "
                     "called `input`) is yours",
         "the others, among them " + "; ".join(f"`{name}` ({why})" for name, why in refused_builtins.items())
         + f"; and binding {_code(trusted)} to something of your own"),
        ("attributes", "torch's public API (`torch`, `Tensor`, `nn`, `F`, `nn.init`, `linalg`, ...), Python's "
                       f"own types, your own names; of the dunders {_code(dunders)}",
         "torch's own attention under any name (`F.scaled_dot_product_attention`, `nn.MultiheadAttention`, "
         "`F.multi_head_attention_forward`, ...); routes below torch's public API "
         f"({_code(refused['torch_routes'][:8])}, private state and C functions such as `torch._C`); "
         f"loading code or files ({_code(refused['loaders'][:4])}); the interpreter's internals "
         f"({_code(refused['interpreter'][:4])}, frames); what turns data into attribute names "
         f"({_code(refused['names_from_data'])}: their keys); any other dunder; a private name (`_x`) that "
         "attention.py does not define, or that torch defines too (`torch._import_dotted_name`); "
         "`.type()` with anything but torch's own name (`x.type(torch.float64)`; for a variable, `x.to(dtype)`). "
         "A reserved name is refused on every object, your own too: the scan cannot tell which object an "
         "attribute is read from (name a method of yours `attend`, not `scaled_dot_product_attention`)"),
    ]
    lines = [BEGIN, "", "| | you may use | refused before your code runs |", "|---|---|---|"]
    lines += [f"| {what} | {allowed} | {refused_text} |" for what, allowed, refused_text in rows]
    return "\n".join([*lines, "", END])


def render_handout(text: str, policy: dict[str, Any]) -> str:
    """text with its generated block replaced (ValueError when the markers are missing)."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + handout_table(policy) + text[end:]
