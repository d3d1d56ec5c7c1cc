"""Which test files can see a change of the student's file: mutation testing's test selection.

A mutant changes a few definitions of the reference. A test whose calls never reach a changed definition runs
the reference's code and gets the reference's result, so a mutant need only be graded on the test files that
can reach its change; the other files' results are the reference's (as mutation tools select tests by coverage).
What each file reaches is recorded, not guessed from its text: the reference is run once under the suites with
instructor.reach_plugin, which notes every name of the student's module each test file reads (`submission.X`).
What each definition reaches is read from both sources: a change reaches every definition that names a changed
one, directly or through others. A change outside the definitions (an import, a constant), or one that leaves
state behind for other calls (a global, an attribute of a module, a setting of torch's), reaches every file; a
test file that reads a name other than a definition (an alias) is always graded. State left through a local alias
of a module-level object is not seen: `instructor mutants --every-file` checks the choice.
"""

import ast
import copy
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from grader.paths import REPO
from grader.run import child_env, pytest_command

Reach = Mapping[str, frozenset[str]]  # test file (relative to the tests folder) -> names of the module it reads
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
SETTINGS = {"manual_seed", "seed", "use_deterministic_algorithms"}  # besides set_*: calls that change later calls


def record(tests_dir: Path, suites: Iterable[str], impl: Path, timeout: float = 600.0) -> Reach:
    """{test file: names it reads} from one run of the suites on impl (the reference: trusted, run unsandboxed)."""
    with tempfile.TemporaryDirectory(prefix="reach-") as tmp:
        out = Path(tmp) / "reach.json"
        command = pytest_command([str(tests_dir / suite) for suite in suites], impl,
                                 ["-rfE", "-p", "instructor.reach_plugin"], rootdir=tests_dir)
        env = {**child_env(), "GRADER_SANDBOX": "off", "REACH_OUT": str(out)}
        done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0 or not out.exists():
            raise RuntimeError(f"recording what each test file reads failed (exit {done.returncode}):\n"
                               + (done.stdout + done.stderr)[-3000:])
        return {file: frozenset(names) for file, names in json.loads(out.read_text()).items()}


def _definitions(source: str) -> tuple[dict[str, ast.AST], list[str]]:
    """({name: definition} of the module's top level, in order, [dump of every other top-level statement]; a
    name defined twice is among the others, as what runs at import)."""
    definitions: dict[str, ast.AST] = {}
    others = []
    for node in ast.parse(source).body:
        if isinstance(node, DEFINITIONS) and node.name not in definitions:
            definitions[node.name] = node
        else:
            others.append(ast.dump(node))
    return definitions, others


def changed(before: str, after: str) -> frozenset[str] | None:
    """The top-level definitions whose code differs between two sources (comments and layout aside); None when
    what runs at import differs (a statement outside the definitions, a definition added or removed, a decorator,
    a default, a base class or a class's own statement), or a changed definition leaves state behind for other
    definitions' calls: every test can see those."""
    old, old_others = _definitions(before)
    new, new_others = _definitions(after)
    if old_others != new_others or list(old) != list(new):
        return None
    differ = frozenset(name for name in old if ast.dump(old[name]) != ast.dump(new[name]))
    if any(_at_import(old[name]) != _at_import(new[name]) or _leaves_state(new[name]) for name in differ):
        return None
    return differ


def _leaves_state(definition: ast.AST) -> bool:
    """Whether the definition may change what later calls of other definitions see: it declares a global, or
    stores into an attribute or item of a name it does not bind itself (a module, a module-level object)."""
    bound = {"self", "cls"}
    for node in ast.walk(definition):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return True
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    for node in ast.walk(definition):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if _root(node.value) not in bound:
                return True
        if isinstance(node, ast.Call) and _sets_a_setting(node.func, bound):
            return True
    return False


def _root(node: ast.AST) -> str | None:
    """The name an attribute or item chain starts from (torch of torch.backends.x), if a name."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _sets_a_setting(function: ast.AST, bound: set[str]) -> bool:
    """A call that changes a library's settings for every later call (torch.set_grad_enabled, torch.manual_seed,
    a context entered by hand): a function of a module-level name called set_*, or any __enter__."""
    name = function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) \
        else ""
    if name == "__enter__":
        return True
    settings = name.startswith("set_") or name in SETTINGS
    return settings and _root(function) not in bound


def _at_import(definition: ast.AST) -> str:
    """The definition without its functions' bodies: what runs when the module is imported."""
    definition = copy.deepcopy(definition)
    for node in ast.walk(definition):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = [ast.Pass()]
    return ast.dump(definition)


def reached(names: frozenset[str], *sources: str) -> frozenset[str]:
    """names and every definition of the sources that names one of them, directly or through others."""
    uses: dict[str, set[str]] = {}
    for source in sources:
        for name, node in _definitions(source)[0].items():
            uses.setdefault(name, set()).update(each.id for each in ast.walk(node) if isinstance(each, ast.Name))
    closure = set(names)
    while more := {name for name, used in uses.items() if used & closure} - closure:
        closure |= more
    return frozenset(closure)


def files_to_grade(reach: Reach, before: str, after: str) -> tuple[str, ...] | None:
    """The test files that can see the change from before to after; None: every file."""
    names = changed(before, after)
    if names is None:
        return None
    closure = reached(names, before, after)
    defined = _definitions(before)[0].keys()
    # a name that is no definition (an alias, g = f) may stand for any of them: its files are always graded
    return tuple(sorted(file for file, read in reach.items() if read & closure or read - defined))


def selection(tests_dir: Path, files: Iterable[str], dest: Path) -> Path:
    """dest holding tests_dir's own files (its conftest.py) and of the suites only files (paths relative to
    tests_dir) with their folders' __init__.py. The suites import their helpers by name (tests.support), from the
    checkout, so those are not copied."""
    dest.mkdir(parents=True)
    for path in tests_dir.iterdir():
        if path.is_file():
            shutil.copy(path, dest / path.name)
    for file in files:
        (dest / file).parent.mkdir(exist_ok=True)
        for source in (tests_dir / file, (tests_dir / file).parent / "__init__.py"):
            if source.exists():
                shutil.copy(source, dest / source.relative_to(tests_dir))
    return dest
