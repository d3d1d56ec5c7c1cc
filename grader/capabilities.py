"""What attention.py may not contain: the constructs that reach the grader's own code in the worker.

The worker's guard and meters (grader.sandbox.guard) live in the student's process; code that finds them
(through sys.modules, a function's __globals__, a frame, the garbage collector, C calls) could switch them
off. Attention needs none of it, so a file that uses any of these is refused before it runs, with the line
and the construct named. The scan reads the source (ast), never runs it.
"""

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from grader import syntax

MODULES = frozenset({"grader", "gc", "ctypes", "_ctypes", "cffi", "inspect", "importlib", "builtins", "marshal",
                     "types", "pydoc", "runpy", "code", "codeop", "pickle", "dill", "cloudpickle", "operator",
                     "imp", "zipimport", "pkgutil", "site", "sysconfig", "modulefinder", "shelve", "copyreg",
                     "weakref", "atexit"})
CALLS = frozenset({"exec", "eval", "compile", "__import__", "breakpoint", "vars", "delattr"})
ATTRIBUTE_CALLS = frozenset({"getattr", "setattr", "hasattr"})  # on another object, only with a constant name
ATTRIBUTES = frozenset({"modules", "_getframe", "settrace", "setprofile", "addaudithook", "meta_path", "path_hooks",
                        "tb_frame", "f_back", "f_globals", "f_locals", "f_builtins", "gi_frame", "cr_frame",
                        "ag_frame", "attrgetter", "methodcaller", "load", "loads", "path_importer_cache"})
SYS_ATTRIBUTES = frozenset({"path"})  # harmless elsewhere (os.path), the import path on sys
DUNDERS = frozenset({"__init__", "__name__", "__class__", "__doc__", "__len__", "__call__", "__repr__", "__str__",
                     "__getitem__", "__setitem__", "__iter__", "__next__", "__enter__", "__exit__", "__eq__",
                     "__hash__", "__module__", "__qualname__", "__annotations__", "__main__", "__future__",
                     "__all__", "__version__", "__slots__", "__post_init__", "__contains__", "__bool__",
                     "__torch_function__", "__torch_dispatch__"})  # torch's protocols: the guard watches them
DUNDER = re.compile(r"__\w+?__")


@dataclass(frozen=True)
class Finding:
    line: int
    construct: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.construct}"


def _dunders(text: str) -> list[str]:
    return [name for name in DUNDER.findall(text) if name not in DUNDERS]


PUBLIC_PRIVATE_NAMES = frozenset({"_exit"})  # os._exit: documented, and ending one's own process is allowed


def _private(name: str) -> bool:
    return name.startswith("_") and name not in PUBLIC_PRIVATE_NAMES and not (
        name.startswith("__") and name.endswith("__") and name in DUNDERS)


def _imported_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(every name an import binds anywhere in the file, those bound to the sys module)."""
    names: set[str] = set()
    sys_names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                names.add(bound)
                if alias.name == "sys":
                    sys_names.add(bound)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return names, sys_names


def _is_sys(node: ast.expr, sys_names: set[str]) -> bool:
    """Whether node names the sys module: an imported sys, or any module's own copy of it (os.sys)."""
    return (isinstance(node, ast.Name) and node.id in sys_names) or (isinstance(node, ast.Attribute)
                                                                     and node.attr == "sys")


def _root(node: ast.expr) -> str | None:
    """The name an attribute chain starts from (torch in torch.a.b), or None."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


class _Scan(ast.NodeVisitor):
    """Torch's and Python's private names are reached only through what a file imports: a chain from an
    imported name with a private part (torch._C, torch.utils._python_dispatch, weakref.finalize._registry)
    is refused, and so is a private name given to getattr/setattr/hasattr on anything but the file's own
    objects. The file's own private names (its helpers, self._cache) are its own."""

    def __init__(self, imported: set[str], sys_names: set[str]) -> None:
        self.found: list[Finding] = []
        self.imported = imported
        self.sys_names = sys_names

    def _add(self, node: ast.AST, construct: str) -> None:
        self.found.append(Finding(getattr(node, "lineno", 0), construct))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] in MODULES:
                self._add(node, f"import {alias.name}")
            elif any(map(_private, alias.name.split("."))):
                self._add(node, f"import {alias.name} (a private module)")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.module.split(".")[0] in MODULES:
            self._add(node, f"from {node.module} import ...")
        elif node.module and any(map(_private, node.module.split("."))):
            self._add(node, f"from {node.module} import ... (a private module)")
        for alias in node.names:
            if alias.name in ATTRIBUTES or alias.name in CALLS or (node.module or "") == "sys" or _private(alias.name):
                self._add(node, f"from {node.module} import {alias.name}")

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in CALLS:
            self._add(node, node.id)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in ATTRIBUTE_CALLS and not _on_self(node):
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self._add(node, f"{node.func.id}() with a name that is not a plain constant")
            elif name.value in ATTRIBUTES or (_private(name.value) and _root(node.args[0]) in self.imported):
                self._add(node, f"{node.func.id}() of {name.value!r}")
        if isinstance(node.func, ast.Attribute) and node.func.attr == "modules" and not node.args:
            self.visit(node.func.value)  # nn.Module.modules(): a method call, not sys.modules
            for argument in [*node.args, *node.keywords]:
                self.visit(argument)
            return
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in ATTRIBUTES or (node.attr.startswith("__") and node.attr.endswith("__")
                                       and node.attr not in DUNDERS):
            self._add(node, f".{node.attr}")
        elif _root(node) in self.imported and _private(node.attr):
            self._add(node, f".{node.attr} (a private name of {_root(node)})")
        elif node.attr in SYS_ATTRIBUTES and _is_sys(node.value, self.sys_names):
            self._add(node, f"sys.{node.attr}")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            for name in _dunders(node.value):
                self._add(node, f"the name {name} in a string")


def _on_self(call: ast.Call) -> bool:
    """getattr(self, name): the student's own object, whose attributes are theirs (a dunder name in a
    string is found anyway)."""
    return bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id in ("self", "cls")


SyntaxScan = Callable[[bytes], list[Finding]]  # what grade() runs on a file before it runs it (scan, below)


def scan(source: str | bytes) -> list[Finding]:
    """The constructs of source that reach the grader's internals ([] for any honest attention.py).
    A file that does not parse has none: importing it fails and says why."""
    try:
        tree = syntax.parse(source)
    except (SyntaxError, ValueError):
        return []
    visitor = _Scan(*_imported_names(tree))
    visitor.visit(tree)
    return sorted(set(visitor.found), key=lambda finding: (finding.line, finding.construct))


def refusal(findings: list[Finding]) -> str:
    """The message a refused file gets: what was found where, and why."""
    shown = "; ".join(map(str, findings[:5])) + ("; ..." if len(findings) > 5 else "")
    return (f"attention.py uses what reaches the grader's own code in the worker ({shown}). Attention needs none "
            "of it (torch, math and your own functions are enough): remove it and submit again")
