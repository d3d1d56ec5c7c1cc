"""The entry of both command lines (`python -m grader`, `python -m instructor`): a failure of the tools' own code
exits 2 as a grader error, never 1 (points lost). Standard library only, so that it reports whatever fails."""

import importlib
import sys
import traceback
from typing import NoReturn


def run(cli_module: str, label: str) -> NoReturn:
    """Exit with cli_module's main(); an exception from it (or from importing it) prints its traceback, then
    `label: what failed` as the last line, and exits 2. KeyboardInterrupt and SystemExit pass through."""
    try:
        code = importlib.import_module(cli_module).main()
    except Exception as error:
        traceback.print_exc()
        print(f"{label}: {type(error).__name__}: {error}", file=sys.stderr)
        code = 2
    raise SystemExit(code)
