"""What attention.py may not contain: the constructs that reach the grader's own code in the worker.

The worker's guard and meters (grader.sandbox.guard) live in the student's process; code that finds them
(through sys.modules, a function's __globals__, a frame, the garbage collector, C calls) could switch them
off. Attention needs none of it, so a file that uses any of these is refused before it runs, with the line
and the construct named. The scan reads the source (ast), never runs it.
"""

import ast
import re
from dataclasses import dataclass

MODULES = frozenset({"grader", "gc", "ctypes", "_ctypes", "cffi", "inspect", "importlib", "builtins", "marshal",
                     "types", "pydoc", "runpy", "code", "codeop", "pickle", "dill", "cloudpickle", "operator"})
CALLS = frozenset({"exec", "eval", "compile", "__import__", "breakpoint", "vars", "delattr"})
ATTRIBUTE_CALLS = frozenset({"getattr", "setattr", "hasattr"})  # on another object, only with a constant name
ATTRIBUTES = frozenset({"modules", "_getframe", "settrace", "setprofile", "addaudithook", "meta_path", "path_hooks",
                        "tb_frame", "f_back", "f_globals", "f_locals", "f_builtins", "gi_frame", "cr_frame",
                        "ag_frame", "attrgetter", "methodcaller", "load", "loads"})
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


class _Scan(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[Finding] = []

    def _add(self, node: ast.AST, construct: str) -> None:
        self.found.append(Finding(getattr(node, "lineno", 0), construct))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] in MODULES:
                self._add(node, f"import {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.module.split(".")[0] in MODULES:
            self._add(node, f"from {node.module} import ...")
        for alias in node.names:
            if alias.name in ATTRIBUTES or alias.name in CALLS:
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
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            for name in _dunders(node.value):
                self._add(node, f"the name {name} in a string")


def _on_self(call: ast.Call) -> bool:
    """getattr(self, name): the student's own object, whose attributes are theirs (a dunder name in a
    string is found anyway)."""
    return bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id in ("self", "cls")


def scan(source: str | bytes) -> list[Finding]:
    """The constructs of source that reach the grader's internals ([] for any honest attention.py).
    A file that does not parse has none: importing it fails and says why."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    visitor = _Scan()
    visitor.visit(tree)
    return sorted(set(visitor.found), key=lambda finding: (finding.line, finding.construct))


def refusal(findings: list[Finding]) -> str:
    """The message a refused file gets: what was found where, and why."""
    shown = "; ".join(map(str, findings[:5])) + ("; ..." if len(findings) > 5 else "")
    return (f"attention.py uses what reaches the grader's own code in the worker ({shown}). Attention needs none "
            "of it (torch, math and your own functions are enough): remove it and submit again")
