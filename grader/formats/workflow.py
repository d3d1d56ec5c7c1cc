"""Text a GitHub Actions runner reads without obeying: no line of the student's becomes a workflow command.

The runner reads a step's log line by line (a line ends at \\n, \\r or \\r\\n) and obeys `::command ...::` at the
start of a line once it has trimmed leading whitespace, and the older `##[command]` anywhere in a line: a student's
exception message holding "\\n  ::add-mask::word" would mask a word of the log, "\\n::error file=...::" forge an
annotation, and "::notice title=Autograding report::" what the reporter tells Classroom. `inert` breaks each of
those with a zero-width space, invisible to a reader: no line of its result starts with "::" after whitespace and
none holds "##[".
"""

import re

ZERO_WIDTH = "\u200b"
# A line's start (the text's start or after \r or \n), any whitespace (a superset of .NET's TrimStart set), "::".
_COMMAND_AT_LINE_START = re.compile(r"(^|[\r\n])(\s*):(?=:)")
_LEGACY_COMMAND = re.compile(r"##(?=\[)")


def inert(text: str) -> str:
    """text with every would-be workflow command broken by a zero-width space; other text unchanged."""
    text = _COMMAND_AT_LINE_START.sub(lambda found: f"{found.group(1)}{found.group(2)}:{ZERO_WIDTH}", text)
    return _LEGACY_COMMAND.sub(f"##{ZERO_WIDTH}", text)
