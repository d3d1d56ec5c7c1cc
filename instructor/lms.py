"""From the batch gradebook to an LMS: GitHub Classroom's roster, then Canvas's gradebook import.

    python -m instructor batch SUBMISSIONS --roster classroom_roster.csv     adds each student's identifier
    python -m instructor canvas-export --gradebook grades.csv --canvas EXPORT.csv --column "Lab 03 (4242)"

Classroom's roster export has the columns identifier, github_username, github_id and name. A batch
folder belongs to a roster row when the folder is named after the GitHub username, or ends with
"-USERNAME" (how `gh classroom clone` names the student repositories).

Canvas imports a CSV of the shape its own gradebook export has: the columns Student, ID, SIS User ID,
SIS Login ID and Section identify the student (Canvas matches on them), every further column is an
assignment named "Title (assignment id)", and an optional second row "Points Possible" gives the
maxima. The export command copies the identity columns of the instructor's export, adds the one
assignment column and fills it for each student the roster identifier finds (by SIS Login ID, SIS
User ID, ID or the student's name, in that order). A student missing on either side is listed.
"""

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

Row = dict[str, str]

CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Section")
CANVAS_MATCH_ORDER = ("SIS Login ID", "SIS User ID", "ID", "Student")
POINTS_POSSIBLE = "Points Possible"


@dataclass
class Unmatched:
    """Who could not be joined: nobody is dropped silently."""

    without_roster_entry: list[str] = field(default_factory=list)  # graded folders no roster row names
    not_submitted: list[str] = field(default_factory=list)  # roster rows with no graded folder
    not_in_canvas: list[str] = field(default_factory=list)  # graded students Canvas does not list
    without_grade: list[str] = field(default_factory=list)  # Canvas students with no grade

    def lines(self) -> list[str]:
        labels = {
            "without_roster_entry": "graded, but no roster row names this folder",
            "not_submitted": "on the roster, but no submission was graded",
            "not_in_canvas": "graded, but not in the Canvas export (left out of the import)",
            "without_grade": "in Canvas, but no grade (their cell is left empty)",
        }
        return [f"{labels[name]}: {', '.join(people)}" for name, people in vars(self).items() if people]


def read_rows(path: str | Path) -> list[Row]:
    """The rows of a CSV file (a spreadsheet's byte-order mark dropped)."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        return list(csv.DictReader(handle))


def roster_entry(folder: str, roster: Sequence[Row]) -> Row | None:
    """The roster row whose GitHub username names the batch folder, or None."""
    lowered = folder.lower()
    for row in roster:
        username = row.get("github_username", "").strip().lower()
        if username and (lowered == username or lowered.endswith("-" + username)):
            return row
    return None


def add_roster(gradebook: str | Path, roster_csv: str | Path) -> Unmatched:
    """Rewrite the gradebook CSV with the roster's identifier and github_username after `student`."""
    rows = read_rows(gradebook)
    roster = read_rows(roster_csv)
    unmatched = Unmatched()
    matched_usernames: set[str] = set()
    for row in rows:
        entry = roster_entry(row["student"], roster)
        row["identifier"] = entry["identifier"] if entry else ""
        row["github_username"] = entry["github_username"] if entry else ""
        if entry:
            matched_usernames.add(entry["github_username"])
        else:
            unmatched.without_roster_entry.append(row["student"])
    unmatched.not_submitted = [r["identifier"] or r["github_username"] for r in roster
                               if r.get("github_username") and r["github_username"] not in matched_usernames]
    columns = list(rows[0]) if rows else ["student", "identifier", "github_username"]
    columns = ["student", "identifier", "github_username"] + [c for c in columns if c not in
                                                              ("student", "identifier", "github_username")]
    with open(gradebook, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return unmatched


def canvas_row_for(identifier: str, canvas_rows: Sequence[Row]) -> Row | None:
    """The Canvas student that identifier names, trying the columns of CANVAS_MATCH_ORDER in turn."""
    wanted = identifier.strip().lower()
    for column in CANVAS_MATCH_ORDER:
        for row in canvas_rows:
            if row.get(column, "").strip().lower() == wanted:
                return row
    return None


def canvas_export(gradebook: str | Path, canvas_csv: str | Path, column: str, output: str | Path,
                  points_possible: str | None = None) -> Unmatched:
    """Write output, a CSV Canvas's gradebook import accepts, with the gradebook's totals in `column`."""
    graded = read_rows(gradebook)
    if graded and "identifier" not in graded[0]:
        raise ValueError(f"{gradebook} has no identifier column: run batch with --roster first")
    exported = read_rows(canvas_csv)
    if not exported or "Student" not in exported[0]:
        raise ValueError(f"{canvas_csv} is not a Canvas gradebook export (no Student column)")
    identity = [name for name in CANVAS_IDENTITY if name in exported[0]]
    points_row = next((row for row in exported if row["Student"].strip() == POINTS_POSSIBLE), None)
    students = [row for row in exported if row is not points_row]
    unmatched = Unmatched()
    scores: dict[int, str] = {}
    for row in graded:
        match = canvas_row_for(row["identifier"], students) if row["identifier"] else None
        if match is None:
            unmatched.not_in_canvas.append(row["identifier"] or row["student"])
        else:
            scores[id(match)] = row["total"]
    with open(output, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*identity, column])
        if points_row is not None:
            maximum = points_possible if points_possible is not None else graded[0]["max_score"] if graded else ""
            writer.writerow([points_row[name] for name in identity] + [maximum])
        for row in students:
            if id(row) not in scores:
                unmatched.without_grade.append(row["Student"])
            writer.writerow([row[name] for name in identity] + [scores.get(id(row), "")])
    return unmatched


def report(unmatched: Unmatched, stream: TextIO) -> None:
    for line in unmatched.lines():
        print(f"  ! {line}", file=stream)
