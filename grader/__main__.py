"""`python -m grader`: a failure of the grader's own code exits 2 as a grader error, never 1 (points lost)."""

import sys
import traceback

try:
    from grader.cli import main

    code = main()
except Exception as error:  # KeyboardInterrupt and SystemExit pass through
    traceback.print_exc()
    print(f"grader error (not your code's fault): {type(error).__name__}: {error}", file=sys.stderr)
    code = 2
raise SystemExit(code)
