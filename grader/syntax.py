"""ast.parse that is safe to call from the grader's threads.

CPython 3.11 keeps one AST-construction depth counter per interpreter (python/cpython#106905). Two
threads that build AST objects at once (batch grades students in threads, and a Dask worker runs tasks
in threads) can make an honest parse raise SystemError "AST constructor recursion depth mismatch": a
grader failure that would be reported against the file being parsed. Our own parses take one lock; a
parse that a third party's thread (traceback formatting also parses) still disturbs is run once more,
because the counter is reset at the start of every parse.
"""
from __future__ import annotations

import ast
import threading

_PARSE = threading.Lock()
_ATTEMPTS = 3


def parse(source: str | bytes) -> ast.Module:
    """ast.parse(source); SyntaxError and ValueError are the source's, as with ast.parse."""
    for _ in range(_ATTEMPTS - 1):
        try:
            with _PARSE:
                return ast.parse(source)
        except SystemError as error:
            if "recursion depth mismatch" not in str(error):
                raise
    with _PARSE:
        return ast.parse(source)
