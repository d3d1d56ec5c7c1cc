"""Where a mutant's edit applies: its code, found in the reference with every comment set aside.

A catalogue edit (tests/mutants/) names the code it replaces. Matching it character for character would
tie the catalogue to the reference's comments, so a reworded comment would break a mutant. Here both sides
are compared without their comments (and the blanks before them); the reference's comments inside the
replaced span go with it, those after it stay.
"""

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

TRIPLE_QUOTES = ('"""', "'''")
SPECIAL = re.compile("['\"#]")  # where code may turn into a string or a comment
STRING_STOPS = {quote: re.compile(r"[\\" + quote + "]") for quote in "'\""}  # where a string may end


@dataclass(frozen=True)
class CodeText:
    """text without its comments; origin[i] is where code[i] stands in text."""

    code: str
    origin: tuple[int, ...]


@lru_cache(maxsize=64)  # the reference's, once for every mutant
def without_comments(text: str) -> CodeText:
    """text with each comment and the blanks before it removed; strings (also triple-quoted) are kept whole.
    Works on fragments of a file as well as whole files."""
    code: list[str] = []
    origin: list[int] = []

    def keep(start: int, stop: int) -> None:
        stop = min(stop, len(text))
        code.extend(text[start:stop])
        origin.extend(range(start, stop))

    i, quote = 0, ""
    while i < len(text):
        char = text[i]
        if quote:  # inside a string: only its end (or an escape) matters
            if char == "\\":
                step = 2
            elif text.startswith(quote, i):
                step, quote = len(quote), ""
            else:  # up to the next escape or quote character
                found = STRING_STOPS[quote[0]].search(text, i + 1)
                step = (found.start() if found else len(text)) - i
            keep(i, i + step)
            i += step
        elif char in "'\"":
            quote = text[i:i + 3] if text[i:i + 3] in TRIPLE_QUOTES else char
            keep(i, i + len(quote))
            i += len(quote)
        elif char == "#":
            while code and code[-1] in " \t":
                code.pop()
                origin.pop()
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        else:  # code up to the next quote or comment
            found = SPECIAL.search(text, i + 1)
            stop = found.start() if found else len(text)
            keep(i, stop)
            i = stop
    return CodeText("".join(code), tuple(origin))


def occurrences(source: str, old: str) -> list[tuple[int, int]]:
    """The spans of source whose code is old's code: (start, stop) indices into source."""
    wanted = without_comments(old).code
    if not wanted.strip():
        return []
    haystack = without_comments(source)
    spans = []
    at = haystack.code.find(wanted)
    while at >= 0:
        spans.append((haystack.origin[at], haystack.origin[at + len(wanted) - 1] + 1))
        at = haystack.code.find(wanted, at + 1)
    return spans


def definition_spans(source: str, names: Iterable[str]) -> list[tuple[int, int]]:
    """The spans of source holding the top-level functions and classes called one of names."""
    wanted = set(names)
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return [(starts[node.lineno - 1], starts[node.end_lineno or node.lineno])
            for node in ast.parse(source).body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in wanted]


def replace_code(source: str, old: str, new: str, scopes: Sequence[tuple[int, int]] = ()) -> tuple[str, int]:
    """(source with the one span whose code is old's replaced by new, how many such spans there were).
    Where old's code occurs more than once, only the occurrences inside scopes count (a mutant's own
    functions: the same line may stand in two functions). source is unchanged unless there was one."""
    spans = occurrences(source, old)
    if len(spans) > 1 and scopes:
        spans = [span for span in spans if any(lo <= span[0] and span[1] <= hi for lo, hi in scopes)]
    if len(spans) != 1:
        return source, len(spans)
    start, stop = spans[0]
    return source[:start] + new + source[stop:], 1
