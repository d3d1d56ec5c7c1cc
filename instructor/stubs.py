"""Generate the student stubs from the reference: each `# BEGIN SOLUTION` ... `# END SOLUTION`
block becomes `raise NotImplementedError(...)`; everything else (signatures, docstrings, TODO hints,
given helpers) is kept as it is."""

import re
from collections.abc import Iterator
from pathlib import Path

from grader.paths import SOLUTION_FILE, STUB_FILE

BEGIN = "# BEGIN SOLUTION"
END = "# END SOLUTION"
_DEF = re.compile(r"^\s*(?:def|class)\s+(\w+)")


class MarkerError(ValueError):
    """The solution markers are unbalanced or misplaced."""


def _enclosing_name(lines, index):
    """`function` or `Class.method` around line index."""
    names = []
    indent = None
    for line in reversed(lines[:index]):
        match = _DEF.match(line)
        if match and (indent is None or len(line) - len(line.lstrip()) < indent):
            names.insert(0, match.group(1))
            indent = len(line) - len(line.lstrip())
            if indent == 0:
                return ".".join(names)
    raise MarkerError(f"line {index + 1}: {BEGIN} outside any function")


def solution_blocks(source: str) -> Iterator[tuple[int, int, str]]:
    """Yield (start, end, name) line indices of every solution block (markers included)."""
    lines = source.splitlines()
    start = None
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped == BEGIN:
            if start is not None:
                raise MarkerError(f"line {index + 1}: nested {BEGIN}")
            start = index
        elif stripped == END:
            if start is None:
                raise MarkerError(f"line {index + 1}: {END} without {BEGIN}")
            yield start, index, _enclosing_name(lines, start)
            start = None
    if start is not None:
        raise MarkerError(f"line {start + 1}: {BEGIN} without {END}")


def make_stub(source: str) -> str:
    """Return the student version of a solution source."""
    lines = source.splitlines()
    out = []
    cursor = 0
    for start, end, name in solution_blocks(source):
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        out.extend(lines[cursor:start])
        out.append(f'{indent}raise NotImplementedError("{name} is not implemented yet")')
        cursor = end + 1
    out.extend(lines[cursor:])
    return "\n".join(out) + "\n"


def solution_snippets(source: str) -> list[str]:
    """Code lines that appear only inside solution blocks (stripped, non-trivial): what must never ship."""
    lines = source.splitlines()
    inside: set[int] = set()
    for start, end, _ in solution_blocks(source):
        inside.update(range(start + 1, end))
    given = {line.strip() for index, line in enumerate(lines) if index not in inside}
    snippets = []
    for index in sorted(inside):
        code = lines[index].strip()
        if _distinctive(code) and code not in given and code not in snippets:
            snippets.append(code)
    return snippets


def _distinctive(code):
    """A line that carries solution logic; bare control flow (`if mask is not None:`, `return a, b`) does not."""
    if len(code) < 12 or code.startswith("#"):
        return False
    if code.split(" ", 1)[0] in ("if", "elif", "else:", "return", "for", "while"):
        return "(" in code or "@" in code
    return True


def leaked_lines(text: str, source: str) -> list[str]:
    """The solution-only lines that appear (as whole stripped lines) in text."""
    present = {line.strip() for line in text.splitlines()}
    return [code for code in solution_snippets(source) if code in present]


def write_stubs(solution: str | Path = SOLUTION_FILE, stub: str | Path = STUB_FILE) -> Path:
    """Write the stub of solution to stub; returns stub's path."""
    stub = Path(stub)
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text(make_stub(Path(solution).read_text()))
    return stub
