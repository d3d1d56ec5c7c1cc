"""What the student's file may use, checked before any of it runs: an allow-list, read from the lab's description.

The worker's guard and meters (grader.sandbox.guard) live in the student's process; code that finds them
(through sys.modules, a function's __globals__, a frame, the garbage collector, C calls) could switch them
off. So the file is read (ast, never run) against what the lab allows (lab/allowed-use.json, with the names
generated from torch in lab/allowed-names.json):
- its syntax: every ordinary construct but the few the policy refuses;
- its imports: only the policy's modules, and from them only their public, not refused names;
- its names: the builtins less those that run strings, read files or hand out namespaces; getattr and its
  kin only as a direct call with a literal name that is itself allowed;
- its attributes: any name but the reserved ones, and dunders from a short list. The reserved names are
  generated (instructor/allowed_names.py): in every module reachable from an allowed import, each name that
  binds a module or function out of that reach (sys, os, importlib, torch._C, ...), private state or a C
  function below torch's dispatcher; what the lab forbids, by every name; the interpreter's internals and
  code loaders. A name the file gives its own object is no exemption: the scan cannot tell which object an
  attribute is read from. Names of the file's own that are not reserved need no listing: the stubs read
  attributes that only the student's code defines, and a file with some tasks done must run.
A file that cannot be read (not UTF-8, too long, too deep, not Python) is refused as the student's, with
what to change. scan() never raises on any input.
"""

from __future__ import annotations

import ast
import builtins
import re
import string
import symtable
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from grader import syntax
from grader.lab import LAB, Lab
from grader.paths import IMPL_NAME

DUNDER = re.compile(r"__\w+?__")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Finding:
    line: int
    construct: str
    unreadable: bool = False  # the file could not be read at all, rather than using something refused

    def __str__(self) -> str:
        return f"line {self.line}: {self.construct}" if self.line else self.construct


@dataclass(frozen=True)
class Policy:
    """The lab's allowed-use description, as sets."""

    modules: frozenset[str]
    imports: dict[str, frozenset[str]]
    reserved: frozenset[str]
    dunders: frozenset[str]
    refused_builtins: dict[str, str]
    name_calls: frozenset[str]
    refused_syntax: dict[str, str]
    max_depth: int
    max_lines: int
    kernel_parts: tuple[str, ...]
    restricted: dict[str, frozenset[str]]
    print_streams: dict[str, frozenset[str]]
    max_bytes: int
    torch_private: frozenset[str]
    reviewed_private: frozenset[str]
    string_imports: frozenset[str]
    builtins: frozenset[str]
    trusted_names: frozenset[str]
    from_data: frozenset[str]  # names that turn data into attribute names
    from_data_why: str


@lru_cache(maxsize=8)
def policy_of(lab: Lab = LAB) -> Policy:
    data, names = lab.policy, lab.names
    return Policy(
        modules=frozenset(data["modules"]),
        imports={module: frozenset(listed) for module, listed in names["imports"].items()},
        reserved=frozenset(names["reserved"]),
        dunders=frozenset(data["dunders"]),
        refused_builtins=dict(data["builtins_refused"]),
        name_calls=frozenset(data["name_calls"]["functions"]),
        refused_syntax=dict(data["syntax"]["refused"]),
        max_depth=int(data["syntax"]["max_depth"]),
        max_lines=int(data["syntax"]["max_lines"]),
        kernel_parts=tuple(data["attributes_refused"]["kernel_parts"]),
        restricted={module: frozenset(listed) for module, listed in names["restricted"].items()},
        print_streams={module: frozenset(listed) for module, listed in data["print_streams"].items()
                       if module != "about"},
        max_bytes=int(data["syntax"]["max_bytes"]),
        torch_private=frozenset(names["torch_private"]),
        reviewed_private=frozenset(data["private_names"]["reviewed"]),
        string_imports=frozenset(data["string_imports"]["methods"]),
        builtins=frozenset(data["builtins_allowed"]["names"]) | (_EXCEPTION_CLASSES if data["builtins_allowed"][
            "exception_classes"] else frozenset()),
        trusted_names=frozenset(data["name_calls"]["functions"]) | frozenset(data["builtins_allowed"]["trusted"]),
        from_data=frozenset(data["attributes_refused"].get("names_from_data", ())),
        from_data_why=data["attributes_refused"].get("names_from_data_why", ""),
    )


_EXCEPTION_CLASSES = frozenset(name for name, value in vars(builtins).items()
                               if isinstance(value, type) and issubclass(value, BaseException))


CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)  # PEP 263, as tokenize reads it
LINE_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # what splitlines() splits at besides \r, \n


def _decode(source: str | bytes, policy: Policy) -> str | Finding:
    """The text Python would run, or why the file is not read: too large, not UTF-8, or a coding line that
    would make Python read other text than this (a comment in UTF-8 can be code in UTF-7)."""
    if len(source) > policy.max_bytes:
        return Finding(0, f"{IMPL_NAME} is {len(source):,} bytes; at most {policy.max_bytes:,} are read: a solution "
                          "needs a few thousand", unreadable=True)
    if isinstance(source, str):
        text = source
    else:
        try:
            text = source.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            line = source[:error.start].count(b"\n") + 1
            return Finding(line, f"byte {source[error.start]:#04x} is not UTF-8 text: save {IMPL_NAME} as UTF-8",
                           unreadable=True)
    # Python looks for the coding line in the first two lines it reads, split at \n only; splitlines() also
    # splits at form feeds and other breaks. Every piece of those lines, split either way, is looked at.
    head = "\n".join(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")[:2])
    for number, first in enumerate(head.split("\n"), 1):
        for piece in [*LINE_BREAKS.split(first), first]:
            cookie = CODING.match(piece)
            if cookie and cookie.group(1).lower().replace("_", "-") not in ("utf-8", "utf8", "utf-8-sig"):
                return Finding(number, f"a coding line for {cookie.group(1)}: save {IMPL_NAME} as UTF-8 and remove "
                                       "it", unreadable=True)
    return text


def _parse(text: str, policy: Policy) -> ast.Module | Finding:
    lines = text.count("\n") + 1
    if lines > policy.max_lines:
        return Finding(0, f"{IMPL_NAME} has {lines} lines; at most {policy.max_lines} are read: a solution needs "
                          "a few hundred", unreadable=True)
    try:
        return syntax.parse(text)
    except SyntaxError as error:
        return Finding(error.lineno or 0, f"Python cannot read it: {error.msg}", unreadable=True)
    except ValueError as error:  # a null byte
        return Finding(0, f"Python cannot read it: {error}", unreadable=True)
    except (RecursionError, MemoryError):
        return Finding(0, "Python cannot read it: an expression or block nested too deeply (split it into "
                          "steps)", unreadable=True)


def _nodes(tree: ast.AST, limit: int) -> list[ast.AST] | Finding:
    """Every node of tree, in one pass without recursion (the tree may be deep); or the first node nested
    deeper than limit, where Python's own compiler gives up."""
    nodes: list[ast.AST] = []
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return Finding(getattr(node, "lineno", 0), f"nested more than {limit} levels deep: split it into steps",
                           unreadable=True)
        nodes.append(node)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return nodes


@dataclass(frozen=True)
class Resolution:
    """How Python resolves the file's names (symtable, scope by scope): the names some scope reads from the
    builtins, and every name the file binds in any scope."""

    builtins: frozenset[str]
    bound: frozenset[str]
    imported_only: frozenset[str]  # bound by imports and nothing else, in every scope
    bound_outside_functions: frozenset[str]  # bound at module level or in a class body


def _scopes(table: symtable.SymbolTable) -> Iterator[symtable.SymbolTable]:
    yield table
    for child in table.get_children():
        yield from _scopes(child)


def _resolve(text: str) -> Resolution | Finding:
    try:
        with syntax.PARSE_LOCK:
            module = symtable.symtable(text, IMPL_NAME, "exec")
    except SyntaxError as error:  # what ast accepts and the compiler does not: `nonlocal x` at the top, ...
        return Finding(error.lineno or 0, f"Python cannot read it: {error.msg}", unreadable=True)
    except (RecursionError, MemoryError, ValueError):
        return Finding(0, "Python cannot read it: split it into simpler steps", unreadable=True)
    tables = list(_scopes(module))
    bound: set[str] = set()
    module_level: set[str] = set()
    outside_functions: set[str] = set()
    imported: set[str] = set()
    bound_otherwise: set[str] = set()
    for table in tables:
        for symbol in table.get_symbols():
            binds = symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace() or symbol.is_parameter()
            if binds:
                bound.add(symbol.get_name())
            if symbol.is_imported():
                imported.add(symbol.get_name())
            if symbol.is_assigned() or symbol.is_namespace() or symbol.is_parameter():
                bound_otherwise.add(symbol.get_name())
            if binds and (table is module or symbol.is_declared_global()):
                module_level.add(symbol.get_name())
            if binds and (table.get_type() in ("module", "class") or symbol.is_declared_global()):
                outside_functions.add(symbol.get_name())
    read = {symbol.get_name() for table in tables for symbol in table.get_symbols()
            if symbol.is_referenced() and (symbol.is_global() or table is module)
            and symbol.get_name() not in module_level}
    return Resolution(frozenset(read & set(vars(builtins))), frozenset(bound), frozenset(imported - bound_otherwise),
                      frozenset(outside_functions))


NAMED_FIELDS = ("namedtuple", "NamedTuple", "make_dataclass")  # types whose attribute names are given as strings
# What a class read off an object (type(x), x.__class__, getattr(x, "__class__")) may give: strings only. Called,
# bound or passed on, the class of a class is type, whose three-argument call builds a class from names made at
# run time, dunder methods included (the metaclass rule's reason).
CLASS_STRINGS = frozenset({"__name__", "__qualname__", "__module__", "__doc__"})
CLASS_READERS = frozenset({"isinstance", "issubclass"})  # builtins that only compare the classes they are given
CLASS_PRINTERS = frozenset({"print", "str", "repr", "format"})  # builtins that only turn their argument into text
ENUM_READERS = frozenset({"list", "tuple", "set", "sorted", "len", "iter", "reversed"})  # they only iterate it
BUILTIN_CLASSES = frozenset(name for name, value in vars(builtins).items() if isinstance(value, type))
BUILTIN_NAMES = frozenset(vars(builtins))
ENUM_CLASSES = frozenset({"Enum", "IntEnum", "Flag", "IntFlag"})  # called with names, they build a class of them


def _classes_only(nodes: list[ast.AST]) -> set[str]:
    """The names only class statements bind: no assignment, import, parameter, def, loop or handler binds them."""
    classes, other = set(), set()
    for node in nodes:
        if isinstance(node, ast.ClassDef):
            classes.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            other.add(node.id)
        elif isinstance(node, ast.alias):
            other.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            other.add(node.name)
        elif isinstance(node, ast.arg):
            other.add(node.arg)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            other.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            other.add(node.rest)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            other.update(node.names)
    return classes - other


def _type_variables(nodes: list[ast.AST]) -> set[str]:
    """Names bound once, to TypeVar(...), and never otherwise (the T of Generic[T])."""
    assigned: dict[str, list[ast.AST]] = {}
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            assigned.setdefault(node.id, []).append(node)
    return {node.targets[0].id for node in nodes
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call) and _called_name(node.value) == "TypeVar"
            and len(assigned[node.targets[0].id]) == 1}


def _literal_names(value: ast.expr | None) -> bool:
    """A string literal, or a tuple or list of them."""
    if isinstance(value, (ast.Tuple, ast.List)):
        return all(_literal_names(element) for element in value.elts)
    return isinstance(value, ast.Constant) and isinstance(value.value, str)


def _defined(nodes: list[ast.AST]) -> set[str]:
    """The attribute names the file defines itself: what it assigns to an attribute, its functions and
    classes, the names a class body binds (dataclass fields), and the fields it names for a namedtuple."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                names |= {target.id for statement in node.body for target in _targets(statement)}
        elif isinstance(node, ast.Call) and _called_name(node) in NAMED_FIELDS:
            for argument in ast.walk(node):
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    names |= set(IDENTIFIER.findall(argument.value))
        elif isinstance(node, ast.Call) and _called_name(node) in ("setattr", "delattr") and len(node.args) > 1:
            name = node.args[1]  # setattr(obj, "name", value) assigns obj.name
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                names.add(name.value)
    return names


def _targets(statement: ast.stmt) -> Iterator[ast.Name]:
    targets = statement.targets if isinstance(statement, ast.Assign) else (
        [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else [])
    for target in targets:
        yield from (node for node in ast.walk(target) if isinstance(node, ast.Name))


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _scope_of(root: ast.AST) -> dict[int, int]:
    """Each node's scope: the function, lambda, class or module it is in (a comprehension counts as the
    scope around it, so a name it binds counts as bound there)."""
    scopes: dict[int, int] = {}
    stack: list[tuple[ast.AST, int]] = [(root, id(root))]
    while stack:
        node, scope = stack.pop()
        scopes[id(node)] = scope
        inner = id(node) if isinstance(node, SCOPES) else scope
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return scopes


COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _binds_literals(loop: ast.For | ast.comprehension, name: str) -> bool:
    """loop is `for name in (literal strings)`."""
    return isinstance(loop.target, ast.Name) and loop.target.id == name and isinstance(
        loop.iter, (ast.Tuple, ast.List, ast.Set)) and bool(loop.iter.elts) and all(
        isinstance(item, ast.Constant) and isinstance(item.value, str) for item in loop.iter.elts)


def _comprehension_binds(comprehension: ast.AST, child: ast.AST, name: str) -> bool:
    """child, a part of comprehension, sees name bound by one of its loops over literal strings: child is the
    element or a later loop (the first loop's iterable is evaluated outside the comprehension)."""
    generators = comprehension.generators  # type: ignore[attr-defined]
    elements = [getattr(comprehension, part) for part in ("elt", "key", "value") if hasattr(comprehension, part)]
    for index, generator in enumerate(generators):
        if child is generator:  # the loop's own iterable (or, not binding the name, its conditions)
            return False
        if _binds_literals(generator, name):
            return any(child is part for part in (*generators[index + 1:], *elements))
    return False


def _literal_loops(nodes: list[ast.AST], scope_of: dict[int, int]) -> dict[tuple[int, str], set[str]]:
    """(scope, name) of the names a scope binds only as the variable of loops over literal strings (for name
    in ("w_q", "w_k")), with those strings: getattr(self, name) in that scope then reads only them.

    The ways of binding are listed here rather than read from symtable (_resolve): a symbol there says that a
    scope binds the name, not which statements do, and the question is whether any other statement does."""
    loops: dict[tuple[int, str], set[str]] = {}
    targets: set[int] = set()
    for node in nodes:
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) and _binds_literals(
                node, node.target.id):
            key = (scope_of[id(node.target)], node.target.id)
            loops.setdefault(key, set()).update(item.value for item in node.iter.elts)  # type: ignore[attr-defined]
            targets.add(id(node.target))
    bound_otherwise: set[tuple[int, str]] = set()  # every other way Python binds a name, in its scope
    declared: set[str] = set()  # names a global or nonlocal statement rebinds from a nested scope
    for node in nodes:
        scope = scope_of[id(node)]
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in targets:
            bound_otherwise.add((scope, node.id))
        elif isinstance(node, ast.arg):
            bound_otherwise.add((scope, node.arg))
        elif isinstance(node, ast.alias):
            bound_otherwise.add((scope, (node.asname or node.name).split(".")[0]))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound_otherwise.add((scope, node.name))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):  # the name is then another scope's: never a loop's
            bound_otherwise.update((scope, name) for name in node.names)
            bound_otherwise.update((id(nodes[0]), name) for name in node.names)
            declared.update(node.names)  # whichever enclosing scope owns it, a nested scope rebinds it
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound_otherwise.add((scope, node.name))
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound_otherwise.add((scope, node.rest))
    return {key: values for key, values in loops.items() if key not in bound_otherwise and key[1] not in declared}


class _Check:
    """The rules, one per node type (visit_*). __init__ first reads what the rules depend on, in passes of
    their own because the file's order is not Python's: a function may read sys.x above the `import sys` that
    restricts it, and an attribute's rule needs every import known."""

    def __init__(self, policy: Policy, nodes: list[ast.AST], resolution: Resolution) -> None:
        self.policy = policy
        self.resolution = resolution
        self.own = _defined(nodes)
        self.scope_of = _scope_of(nodes[0])
        self.loops = _literal_loops(nodes, self.scope_of)
        self.parent = {id(child): node for node in nodes for child in ast.iter_child_nodes(node)}
        for node in nodes:  # setattr(obj, name, value) for name in literals assigns each obj.literal
            if isinstance(node, ast.Call) and _called_name(node) in ("setattr", "delattr") and len(node.args) > 1:
                variable = node.args[1]
                if isinstance(variable, ast.Name):
                    self.own |= self.loop_values(variable) or set()
        self.found: list[Finding] = []
        self.name_call_callees: set[int] = set()
        self.type_callees = {id(node.func) for node in nodes if isinstance(node, ast.Call)
                             and isinstance(node.func, ast.Name) and node.func.id == "type"
                             and len(node.args) == 1 and not node.keywords}
        self.classes_only = _classes_only(nodes)
        self.type_variables = _type_variables(nodes)
        self.class_scopes = {id(node) for node in nodes if isinstance(node, ast.ClassDef)}
        self.class_definitions: dict[str, list[ast.ClassDef]] = {}
        for node in nodes:
            if isinstance(node, ast.ClassDef):
                self.class_definitions.setdefault(node.name, []).append(node)
        self.from_module: dict[str, set[tuple[str, str]]] = {}  # a name `from M import X as name` binds -> {(M, X)}
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and not node.level:
                for alias in node.names:
                    self.from_module.setdefault(alias.asname or alias.name, set()).add((node.module or "", alias.name))
        self.restricted: dict[str, str] = {}  # the name `import sys` binds -> "sys"
        self.restricted_uses: set[int] = set()  # Name nodes used as NAME.allowed_attribute
        self.read_as: dict[int, str] = {}  # Name node -> the attribute read from it (NAME.attribute)
        self.restricted_attributes: set[int] = set()  # Attribute nodes NAME.listed_name of a restricted module
        self.torch_names: set[str] = set()  # the names `import torch` binds
        self.statements = {id(node.value) for node in nodes if isinstance(node, ast.Expr)}  # docstrings: words only
        self.read_targets = {id(node.target) for node in nodes if isinstance(node, ast.AugAssign)}  # x.a += 1 reads x.a
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    # `import a.b` binds a: the name is then bound to package a, under a's restriction
                    name, module = (alias.asname, alias.name) if alias.asname else (alias.name.split(".")[0],) * 2
                    if module in policy.restricted:
                        self.restricted[name] = module
                    if module == "torch":
                        self.torch_names.add(name)
        for node in nodes:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                self.read_as[id(node.value)] = node.attr
                if node.attr in policy.restricted.get(self.restricted.get(node.value.id, ""), ()):
                    self.restricted_uses.add(id(node.value))
                    self.restricted_attributes.add(id(node))
        for node in nodes:  # print(..., file=sys.stderr): the stream goes to print, and no further
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                for keyword in node.keywords:
                    stream = keyword.value
                    if (keyword.arg == "file" and isinstance(stream, ast.Attribute)
                            and isinstance(stream.value, ast.Name)
                            and stream.attr in policy.print_streams.get(self.restricted.get(stream.value.id, ""), ())):
                        self.restricted_uses.add(id(stream.value))
                        self.restricted_attributes.add(id(stream))
        self.enum_classes: set[str] = set()  # the file's own classes derived from an Enum (needs self.restricted)
        self.enum_class_parameters: set[tuple[int, str]] = set()  # (scope, name): cls of an Enum's classmethod
        classes = [node for node in nodes if isinstance(node, ast.ClassDef)]
        while True:
            derived = {node.name for node in classes if any(self.is_enum(base) for base in node.bases)}
            if derived <= self.enum_classes:
                break
            self.enum_classes |= derived
        for node in classes:  # an Enum's classmethod gets the class as its first parameter
            if node.name in self.enum_classes:
                for method in node.body:
                    if isinstance(method, ast.FunctionDef) and method.args.args and any(
                            isinstance(decorator, ast.Name) and decorator.id == "classmethod"
                            for decorator in method.decorator_list):
                        self.enum_class_parameters.add((id(method), method.args.args[0].arg))

    def add(self, node: ast.AST, construct: str) -> None:
        self.found.append(Finding(getattr(node, "lineno", 0), construct))

    def attribute(self, node: ast.AST, name: str, how: str = ".") -> None:
        shown = f"{how}{name}" if how == "." else f"{how}{name!r}"
        if name.startswith("__") and name.endswith("__"):
            if name not in self.policy.dunders:
                self.add(node, f"{shown} (a dunder that reaches Python's internals)")
        elif name in self.policy.reserved:
            own = (f"; {IMPL_NAME} defines a {name} of its own, but the name is reserved on every object (the scan "
                   "cannot tell which object an attribute is read from): rename yours") if name in self.own else ""
            self.add(node, f"{shown} (reserved: {_why_reserved(name, self.policy)}{own})")
        elif name.startswith("_") and name not in self.policy.reviewed_private and (
                name not in self.own or name in self.policy.torch_private):
            why = ("a private name of torch's or Python's" if name in self.policy.torch_private
                   else "not defined by " + IMPL_NAME)
            self.add(node, f"{shown} ({why}: a private name is the file's own only where it defines it)")

    def visit(self, node: ast.AST) -> None:
        kind = type(node).__name__
        if kind in self.policy.refused_syntax:
            self.add(node, f"{self.policy.refused_syntax[kind]} (not needed in this lab)")
        rule: Callable[[ast.AST], None] | None = getattr(self, f"visit_{kind}", None)
        if rule is not None:
            rule(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            top = alias.name.split(".")[0]
            if alias.name not in self.policy.modules and alias.name not in self.policy.restricted:
                self.add(node, f"import {alias.name} ({_modules_line(self.policy)})")
            elif not alias.asname and top not in self.policy.modules and top not in self.policy.restricted:
                self.add(node, f"import {alias.name} (it binds {top}, which {IMPL_NAME} may not import: write "
                               f"import {alias.name} as NAME)")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = "." * node.level + (node.module or "")
        if module in self.policy.restricted and not node.level:
            for alias in node.names:
                if alias.name not in self.policy.restricted[module]:
                    self.add(node, f"from {module} import {alias.name} ({_restricted_line(module, self.policy)})")
            return
        if node.level or module not in self.policy.modules:
            self.add(node, f"from {module} import ... ({_modules_line(self.policy)})")
            return
        for alias in node.names:
            if alias.name == "*":
                self.add(node, f"from {module} import * (name what you import)")
            elif f"{module}.{alias.name}" not in self.policy.modules and alias.name not in self.policy.imports.get(
                    module, frozenset()) and module != "__future__":
                self.add(node, f"from {module} import {alias.name} (not one of {module}'s public names allowed here)")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if id(func) in self.type_callees:
            self.class_of(node, "type(x)")
        if (isinstance(func, ast.Attribute) and func.attr in self.policy.string_imports
                and not self._torch_type_call(node)):
            self.add(node, f".{func.attr}() with an argument other than torch's own name such as torch.float64 "
                           "(given a string, it imports a module by name): write .to(dtype)")
        if isinstance(func, ast.Attribute) and func.attr in ("format", "format_map"):
            self._format_call(node, func)
        if isinstance(func, ast.Name) and func.id in self.policy.name_calls:
            name = node.args[1] if len(node.args) > 1 else None
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and not node.keywords:
                self.name_call_callees.add(id(func))
                self.named_by_a_call(node, func.id, name.value)
            elif isinstance(name, ast.Name) and (values := self.loop_values(name)) and not node.keywords:
                self.name_call_callees.add(id(func))
                for value in sorted(values):
                    self.named_by_a_call(node, func.id, value)
            else:
                self.name_call_callees.add(id(func))
                self.add(node, f"{func.id}() with a name that is not a string literal or a loop over literals "
                              "(write obj.name)")

    def loop_values(self, name: ast.Name) -> set[str] | None:
        """The literal strings name holds where it is read, when that read lies inside the body of the loop over
        them that is the name's only binding in its scope (for n in ("a", "b"): ... getattr(x, n) ..., or a
        comprehension's element, conditions and later loops), with no scope between: there the name can hold
        nothing else. None elsewhere (a class body's nested comprehension reads the module's name instead)."""
        values = self.loops.get((self.scope_of[id(name)], name.id))
        if not values:
            return None
        child: ast.AST = name
        while (node := self.parent.get(id(child))) is not None:
            in_body = isinstance(node, ast.For) and any(child is statement for statement in node.body)
            if in_body and _binds_literals(node, name.id):  # type: ignore[arg-type]
                return values
            if isinstance(node, ast.comprehension) and _binds_literals(node, name.id) and any(
                    child is condition for condition in node.ifs):
                return values
            if isinstance(node, COMPREHENSIONS):
                return values if _comprehension_binds(node, child, name.id) else None
            if isinstance(node, SCOPES):
                return None
            child = node
        return None

    def named_by_a_call(self, node: ast.Call, function: str, name: str) -> None:
        """getattr(x, name) and its kin, with a literal name: the rules of x.name apply; a method whose string
        argument the scan reads only where it is called as x.name(...) (format's template, type's module name) may
        not be taken this way."""
        self.attribute(node, name, f"{function}() of ")
        if function == "getattr" and name == "__class__":
            self.class_of(node, "getattr(x, '__class__')")
        if function == "getattr" and name in self.policy.string_imports | {"format", "format_map"}:
            self.add(node, f"getattr() of {name!r} (its string argument is checked only in a direct call: write "
                           f"x.{name}(...))")

    def class_of(self, node: ast.expr, shown: str) -> None:
        """node reads an object's class (shown): refused unless the class is only read for its name, compared
        safely, given to isinstance/issubclass, printed, or called so that it cannot build a class."""
        if not self._class_only_read(node):
            self.add(node, f"{shown} other than read for its name, compared with `is` or a named class, given to "
                           "isinstance, printed, or called with 0, 2 or 4+ arguments (the class of a class is type: "
                           "type(C)(a, b, c) builds a class from names made at run time, type(C)(x) is type(x)): "
                           "name the class instead, as in MyClass(x) or `type(x) is torch.Tensor`")

    def _class_only_read(self, node: ast.expr) -> bool:
        parent = self.parent.get(id(node))
        if isinstance(parent, ast.Attribute):
            return parent.attr in CLASS_STRINGS
        if isinstance(parent, ast.Compare):
            return self._compared_safely(node, parent)
        if isinstance(parent, ast.FormattedValue):
            return True
        if isinstance(parent, (ast.Tuple, ast.List, ast.Set)):  # (int, type(x)): classes, read the same way
            return self._class_only_read(parent)
        if isinstance(parent, ast.BinOp):  # "%s" % type(x)
            return (isinstance(parent.op, ast.Mod) and parent.right is node and isinstance(parent.left, ast.Constant)
                    and isinstance(parent.left.value, str))
        if not isinstance(parent, ast.Call):
            return False
        if parent.func is node:  # type(self)(a, b) is a new instance; type(C)(name, bases, namespace) a class
            if any(isinstance(argument, ast.Starred) for argument in parent.args) or not all(
                    keyword.arg for keyword in parent.keywords) or len(parent.args) == 3:
                return False
            # type(C)(x) is type(x): a class again, read under the same rule
            return self._class_only_read(parent) if len(parent.args) == 1 and not parent.keywords else True
        name = parent.func.id if isinstance(parent.func, ast.Name) else None
        if name is None or name in self.resolution.bound or any(
                isinstance(argument, ast.Starred) for argument in parent.args) or parent.keywords:
            return False
        return (name in CLASS_READERS and len(parent.args) == 2) or (name in CLASS_PRINTERS and len(parent.args) == 1)

    def _compared_safely(self, node: ast.expr, compare: ast.Compare) -> bool:
        """Each comparison of node runs no code of the file's: `is`; == with a class (a class's __eq__ is
        type's, an object's may be the file's); `in` a literal tuple of classes (whose == is theirs), never `in`
        a class (a metaclass's __contains__ compares with the members' ==)."""
        operands = [compare.left, *compare.comparators]
        at = next(index for index, operand in enumerate(operands) if operand is node)
        for index, op in enumerate(compare.ops):
            if at not in (index, index + 1) or isinstance(op, (ast.Is, ast.IsNot)):
                continue
            other = operands[index + 1] if at == index else operands[index]
            literal = (ast.Tuple, ast.List, ast.Set)
            if isinstance(op, (ast.Eq, ast.NotEq)):
                fine = self.is_a_class(other)
            elif isinstance(op, (ast.In, ast.NotIn)):  # node in other, or other in node
                container = other if at == index else node
                fine = isinstance(container, literal) and self.is_a_class(other)
            else:
                fine = False
            if not fine:
                return False
        return True

    def is_a_class(self, node: ast.expr) -> bool:
        """node is a class (or None) whatever the file does, whose == and `in` run none of the file's code:
        type(x), a builtin class the file does not rebind, a module's class the file does not set (torch.Tensor),
        None, or a tuple of them. (Not x.__class__, which an object's own property could give.)"""
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return all(self.is_a_class(element) for element in node.elts)
        if isinstance(node, ast.Constant):
            return node.value is None
        if isinstance(node, ast.Call):
            return id(node.func) in self.type_callees
        if isinstance(node, ast.Name):
            return node.id in BUILTIN_CLASSES and node.id not in self.resolution.bound
        return self._module_attribute(node)

    def _module_attribute(self, node: ast.expr) -> bool:
        """node is torch.Tensor or the like: a chain of public names from an imported module, none of which the
        file assigns (torch.Tensor = ... or setattr(torch, "Tensor", ...)), so the value is the module's own."""
        root = node
        while isinstance(root, ast.Attribute):
            if root.attr in self.own or root.attr.startswith("_"):
                return False
            root = root.value
        return root is not node and isinstance(root, ast.Name) and (
            root.id in self.resolution.imported_only or root.id not in self.resolution.bound)

    def is_enum(self, node: ast.expr) -> bool:
        """node names an Enum class: enum's own, or one of the file's derived from it."""
        if isinstance(node, ast.Name) and (
                node.id in self.enum_classes or (self.scope_of.get(id(node)), node.id) in self.enum_class_parameters):
            return True
        return any(self._module_name(node, "enum", name) for name in ENUM_CLASSES)

    def enum_use(self, node: ast.expr) -> None:
        """An Enum class called with names builds a class of them (Enum("E", [(name, function)]), a name made
        at run time included): it may be a base, read for a member, iterated, compared with is, an annotation,
        or called with a value; never handed to code that could call it (an own __getitem__ or __eq__ too)."""
        parent = self.parent.get(id(node))
        if isinstance(parent, ast.Call) and parent.func is node:
            fine = len(parent.args) == 1 and not parent.keywords and not isinstance(parent.args[0], ast.Starred)
        elif isinstance(parent, ast.Call):
            name = parent.func.id if isinstance(parent.func, ast.Name) else None
            fine = (name in CLASS_READERS | CLASS_PRINTERS | ENUM_READERS and name not in self.resolution.bound
                    and node in parent.args)
        elif isinstance(parent, (ast.Attribute, ast.Subscript)):  # Kind.CAUSAL, Kind["CAUSAL"]; Kind.mro()[1] is Enum
            fine = parent.value is node and getattr(parent, "attr", "") not in ("__call__", "__init__", "mro")
        elif isinstance(parent, ast.ClassDef):
            fine = node in parent.bases
        elif isinstance(parent, (ast.For, ast.comprehension)):
            fine = parent.iter is node
        elif isinstance(parent, ast.Compare):
            fine = all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops)
        else:  # an annotation; a class body's is read back by dataclasses.fields(): a class of members only
            fine = (node is getattr(parent, "annotation", None) or node is getattr(parent, "returns", None)) and not (
                self._field_annotation(parent) and self._memberless(node))
        if not fine:
            self.add(node, "an Enum class other than as a base, read for a member, iterated, compared or called with "
                           "one value (called with names, it builds a class of them, dunder methods included)")

    def _torch_type_call(self, node: ast.Call) -> bool:
        """x.type(), x.type(torch.float64) or x.type(dtype=torch.float64[, non_blocking=True]): the only names
        it can import are torch's own."""
        def torch_named(value: ast.expr) -> bool:  # torch.float64, and no name of the chain set by the file
            root = value
            while isinstance(root, ast.Attribute):
                root = root.value
            return (isinstance(root, ast.Name) and root.id in self.torch_names
                    and root.id in self.resolution.imported_only and self._module_attribute(value))
        keywords = {keyword.arg: keyword.value for keyword in node.keywords}
        if None in keywords or set(keywords) - {"dtype", "non_blocking"} or len(node.args) + ("dtype" in keywords) > 1:
            return False
        dtype = node.args[0] if node.args else keywords.get("dtype")
        blocking = keywords.get("non_blocking")
        return (dtype is None or torch_named(dtype)) and (blocking is None or isinstance(blocking, ast.Constant))

    def _format_call(self, node: ast.Call, func: ast.Attribute) -> None:
        """str.format reads attributes named inside its template ("{0.name}"): only a literal template, whose
        fields are checked as attributes are."""
        template = func.value
        if not (isinstance(template, ast.Constant) and isinstance(template.value, str)):
            self.add(node, f".{func.attr}() of a template that is not a string literal (a template reads attributes "
                           "by names it holds): use an f-string")
            return
        pending = [template.value]
        while pending:
            try:
                fields = list(string.Formatter().parse(pending.pop()))
            except ValueError:
                return  # Python raises the same when it formats
            for _, field, spec, _ in fields:
                for attribute in re.findall(r"\.([^.\[]*)", field or ""):
                    self.attribute(node, attribute, "a format field's .")
                if spec:
                    pending.append(spec)

    def builtins_used(self, nodes: list[ast.AST]) -> None:
        """The builtins the file reads must be allowed ones, and the names the scan's rules trust (print,
        type, getattr and its kin) must be the builtins themselves."""
        first: dict[str, ast.AST] = {}
        for node in nodes:
            if isinstance(node, ast.Name):
                first.setdefault(node.id, node)
        for name in sorted(self.resolution.builtins - self.policy.builtins):
            if not (name.startswith("__") and name.endswith("__")):  # the dunder rule's
                why = self.policy.refused_builtins.get(name, "not one of the builtins this lab allows")
                self.add(first.get(name, nodes[0]), f"{name} ({why})")
        for name in sorted(self.resolution.bound & self.policy.trusted_names):
            self.add(first.get(name, nodes[0]), f"a name of {IMPL_NAME}'s own called {name} (the grader reads "
                                                f"{name} as Python's own: choose another name)")
        # At module level and in a class body a read before the binding is the builtin's: `exec(...)` then
        # `exec = None` would run it. (A function's names are its own from its start.)
        for name in sorted(self.resolution.bound_outside_functions & BUILTIN_NAMES - self.policy.builtins):
            if not (name.startswith("__") and name.endswith("__")):
                self.add(first.get(name, nodes[0]), f"{name} bound at module level or in a class (the name of a "
                                                    "builtin this lab refuses, which a read before the binding "
                                                    "reaches: choose another name)")

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if isinstance(node.ctx, ast.Load) and self.is_enum(node):
            self.enum_use(node)
        if self._module_name(node, "typing", "Type"):
            self.type_use(node)
        if self._module_name(node, "dataclasses", "field"):
            self.field_use(node)
        if name == "type" and id(node) not in self.type_callees:
            self.add(node, "type other than type(x) (three arguments, or as a base, build classes from names made at "
                           "run time)")
        elif name in self.restricted and id(node) not in self.restricted_uses:
            module, attribute = self.restricted[name], self.read_as.get(id(node))
            shown = f"{name}.{attribute}" if attribute else f"{name} other than as {name}.<name>"
            self.add(node, f"{shown} ({_restricted_line(module, self.policy)})")
        elif name in self.policy.name_calls and id(node) not in self.name_call_callees:
            self.add(node, f"{name} other than called as {name}(obj, 'name')")
        elif name.startswith("__") and name.endswith("__") and name not in self.policy.dunders:
            self.add(node, f"{name} (a dunder that reaches Python's internals)")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load) and node.attr in self.policy.string_imports | {"format", "format_map"}:
            self.method_read(node)
        if isinstance(node.ctx, ast.Load) and self.is_enum(node):
            self.enum_use(node)
        if self._module_name(node, "typing", "Type"):
            self.type_use(node)
        if self._module_name(node, "dataclasses", "field"):
            self.field_use(node)
        if id(node) in self.restricted_attributes:
            return  # the module's listed name: exactly that module's value, whatever else the name means
        if isinstance(node.ctx, ast.Del) and node.attr not in self.own:
            self.add(node, f"del .{node.attr} (deleting what {IMPL_NAME} did not define)")
        elif not isinstance(node.ctx, ast.Store) or id(node) in self.read_targets:
            self.attribute(node, node.attr)
            if node.attr == "__class__":
                self.class_of(node, ".__class__")
        elif node.attr in self.policy.reserved or (node.attr.startswith("__") and node.attr not in self.policy.dunders):
            self.attribute(node, node.attr)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name.startswith("__") and node.name.endswith("__") and node.name not in self.policy.dunders:
            self.add(node, f"def {node.name} (a dunder method outside the lab's list hooks into Python's machinery)")

    def bound_name(self, node: ast.AST, name: str | None, how: str) -> None:
        """A name a statement binds other than through a Name node (an import alias, a match capture, a class):
        in a class body it is an attribute of the class, so a dunder must be on the lab's list."""
        if name and name.startswith("__") and name.endswith("__") and name not in self.policy.dunders:
            self.add(node, f"{how} {name} (a dunder outside the lab's list hooks into Python's machinery)")

    def visit_alias(self, node: ast.alias) -> None:
        self.bound_name(node, node.asname, "import ... as")

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self.bound_name(node, node.name, "case ... as")

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self.bound_name(node, node.name, "case *")

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self.bound_name(node, node.rest, "case {**...}")

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self.bound_name(node, node.name, "except ... as")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.bound_name(node, node.name, "class")
        if any(keyword.arg in ("metaclass", None) for keyword in node.keywords):
            self.add(node, f"class {node.name}(metaclass=...) (a metaclass builds classes from names made at run time)")
        for base in node.bases:
            if not self._named_base(base):
                self.add(base, f"class {node.name}(...) with a base other than a class named by a class statement, "
                               "an import or a module (Python calls the class of an instance given as a base with "
                               "the class body, as a metaclass)")
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == "__class__":
                self.add(statement, "def __class__ (an object's class is read, never defined)")
            if not isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                continue
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names = {target.id for target in targets if isinstance(target, ast.Name)}
            if "__class__" in names:
                self.add(statement, "__class__ = ... in a class (an object's class is read, never defined)")
            if "__slots__" in names and (isinstance(statement, ast.AugAssign) or not _literal_names(statement.value)):
                self.add(statement, "__slots__ other than string literals (each slot is a name of the class)")

    def _named_base(self, base: ast.expr) -> bool:
        """A named class, or one subscripted by named classes, type variables and constants (Generic[T],
        dict[str, int]): Union[x] and Annotated[x, ...] are x itself."""
        if not isinstance(base, ast.Subscript):
            return self._named_class(base)
        parts = base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice]
        return self._named_class(base.value) and all(
            isinstance(part, ast.Constant) or self._named_class(part)
            or (isinstance(part, ast.Name) and part.id in self.type_variables) for part in parts)

    def _named_class(self, node: ast.expr) -> bool:
        """A name only class statements or imports bind, a builtin, or an attribute of an imported module."""
        if isinstance(node, ast.Name):  # (a name the file never binds is a builtin, or a NameError)
            return node.id in self.classes_only or node.id in self.resolution.imported_only or (
                node.id not in self.resolution.bound)
        return self._module_attribute(node)

    def type_use(self, node: ast.expr) -> None:
        """typing.Type is type itself once subclassed (its __mro_entries__): only annotations may name it."""
        annotated: ast.AST = node
        class_variable = False  # inside ClassVar[...]: never a dataclass field
        while isinstance(self.parent.get(id(annotated)), (ast.Subscript, ast.Tuple, ast.BinOp, ast.List)):
            annotated = self.parent[id(annotated)]
            class_variable |= isinstance(annotated, ast.Subscript) and self._module_name(
                annotated.value, "typing", "ClassVar")
        parent = self.parent.get(id(annotated))
        if annotated is not getattr(parent, "annotation", None) and annotated is not getattr(parent, "returns", None) \
                or (self._field_annotation(parent) and not class_variable):
            self.add(node, "typing.Type other than in an annotation of a function, a variable or a ClassVar (as a base "
                           "it is type, a metaclass that builds classes from names made at run time; a dataclass "
                           "field's annotation is handed back by dataclasses.fields())")

    def _field_annotation(self, parent: ast.AST | None) -> bool:
        """parent is an annotated name of a class body (a field, whose annotation the class keeps as a value)."""
        return isinstance(parent, ast.AnnAssign) and self.scope_of.get(id(parent)) in self.class_scopes

    def _memberless(self, node: ast.expr) -> bool:
        """node is enum's own Enum class, or a class of the file's without members (their functional form
        builds a class; one with members refuses to be extended)."""
        if not (isinstance(node, ast.Name) and node.id in self.enum_classes):
            return True
        return not any(isinstance(statement, (ast.Assign, ast.AnnAssign)) and getattr(statement, "value", None)
                       for definition in self.class_definitions.get(node.id, ()) for statement in definition.body)

    def method_read(self, node: ast.Attribute) -> None:
        """.format and .type are checked where they are called (a literal template; torch's own dtype): kept
        as a value and called later (convert = storage.type; convert("module")), neither is. x.device.type is
        a string, as is a .type compared or formatted."""
        parent = self.parent.get(id(node))
        if isinstance(parent, ast.Call) and parent.func is node:
            return
        if node.attr in self.policy.string_imports and (
                isinstance(parent, (ast.Compare, ast.FormattedValue))
                or (isinstance(node.value, ast.Attribute) and node.value.attr == "device")):
            return
        self.add(node, f".{node.attr} other than called (kept as a value and called later, the call is not checked; "
                       f"x.device.{node.attr} is fine)" if node.attr in self.policy.string_imports else
                 f".{node.attr} other than called on a string literal (a template reads attributes by the names "
                 "it holds)")

    def field_use(self, node: ast.expr) -> None:
        """dataclasses.field(...) only as a field's default in a class body: its Field object is then the
        class's alone. Kept elsewhere, its .name could be set to code, which a dataclass built on it pastes
        into the __init__ it compiles."""
        call = self.parent.get(id(node))
        statement = self.parent.get(id(call))
        if not (isinstance(call, ast.Call) and call.func is node and isinstance(statement, ast.AnnAssign)
                and statement.value is call and self.scope_of.get(id(statement)) in self.class_scopes):
            self.add(node, "dataclasses.field other than as a field's default in a class body (x: T = field(...)): "
                           "a Field kept elsewhere can have its name set to code that dataclasses compiles")

    def _module_name(self, node: ast.expr, module: str, name: str) -> bool:
        """node is module's name (imported from module in any scope, or module.name)."""
        if isinstance(node, ast.Name):
            return (module, name) in self.from_module.get(node.id, ())
        return (isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.value, ast.Name)
                and self.restricted.get(node.value.id) == module)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        for name in node.kwd_attrs:  # case C(name=x) reads C's attribute name
            self.attribute(node, name, "case keyword ")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.statements:
            for name in sorted(set(DUNDER.findall(node.value)) - self.policy.dunders):
                self.add(node, f"the name {name} in a string")

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg and node.arg.startswith("__") and node.arg.endswith("__") and node.arg not in self.policy.dunders:
            self.add(node, f"the keyword {node.arg}")


def _why_reserved(name: str, policy: Policy) -> str:
    if any(part in name.lower() for part in policy.kernel_parts):
        return f"{LAB.forbidden['what']}: {LAB.forbidden['instead']}"
    if name in policy.from_data:
        return policy.from_data_why
    if name.startswith("_"):
        return "a private name of torch or Python"
    return "it reaches Python's or torch's internals, files or code loading"


def _restricted_line(module: str, policy: Policy) -> str:
    return f"of {module}, {IMPL_NAME} may use only " + ", ".join(sorted(policy.restricted[module]))


def _modules_line(policy: Policy) -> str:
    shown = sorted(name for name in policy.modules if name != "__future__")
    return f"{IMPL_NAME} may import only " + ", ".join(shown)


def scan(source: str | bytes, lab: Lab = LAB) -> list[Finding]:
    """What the student's file uses that the lab does not allow, or why it cannot be read ([] for an honest file)."""
    policy = policy_of(lab)
    text = _decode(source, policy)
    if isinstance(text, Finding):
        return [text]
    tree = _parse(text, policy)
    if isinstance(tree, Finding):
        return [tree]
    nodes = _nodes(tree, policy.max_depth)
    if isinstance(nodes, Finding):
        return [nodes]
    resolution = _resolve(text)
    if isinstance(resolution, Finding):
        return [resolution]
    check = _Check(policy, nodes, resolution)
    check.builtins_used(nodes)
    for node in nodes:  # calls first: a getattr they allow is not refused as a bare name
        if isinstance(node, ast.Call):
            check.visit_Call(node)
    for node in nodes:
        if not isinstance(node, ast.Call):
            check.visit(node)
    return sorted(set(check.found), key=lambda finding: (finding.line, finding.construct))


SyntaxScan = Callable[[bytes], list[Finding]]  # what grade() runs on a file before it runs it (scan, above)


def refusal(findings: list[Finding]) -> str:
    """The message a refused file gets: what was found where, and what to do."""
    shown = "; ".join(map(str, findings[:5])) + ("; ..." if len(findings) > 5 else "")
    if findings and findings[0].unreadable:
        return f"{IMPL_NAME} cannot be graded as it is ({shown}): fix that and submit again"
    return (f"{IMPL_NAME} uses what this lab does not allow ({shown}). The lab allows torch's tensor operations, "
            "math and your own names (docs/lab.md, 'What you may use'): remove it and submit again")
