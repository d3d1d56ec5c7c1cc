"""CSV files a spreadsheet opens safely: no cell the project writes starts a formula (OWASP "CSV injection").

A student controls their folder name, a roster or Canvas export holds names typed by people: a cell such as
`=HYPERLINK("http://evil.example", "click")` would run as a formula in Excel, LibreOffice or Google Sheets.
Every CSV the project writes goes through `writer()`, which prefixes such cells with a single quote
(spreadsheets show the text as typed). Numbers stay numbers: a float, an int, or text that reads as one
(`42.5`, `-1`) is written unchanged. `original()` undoes the quote when the project reads its own CSV back.
"""

import csv
import math
from collections.abc import Iterable
from typing import Any, TextIO

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def neutralize(cell: Any) -> Any:
    """cell, or "'" + cell when it is text a spreadsheet would run as a formula."""
    if not isinstance(cell, str) or not cell.startswith(TRIGGERS) or _is_number(cell):
        return cell
    return QUOTE + cell


def original(cell: str) -> str:
    """The text neutralize() was given: a cell this project wrote, read back."""
    if cell.startswith(QUOTE) and cell[1:].startswith(TRIGGERS) and not _is_number(cell[1:]):
        return cell[1:]
    return cell


class SafeWriter:
    """csv.writer whose every row is neutralized."""

    def __init__(self, handle: TextIO) -> None:
        self._writer = csv.writer(handle)

    def writerow(self, row: Iterable[Any]) -> None:
        self._writer.writerow([neutralize(cell) for cell in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(handle: TextIO) -> SafeWriter:
    return SafeWriter(handle)
