"""From the batch gradebook to an LMS: GitHub Classroom's roster, then Canvas's gradebook import.

    python -m instructor batch SUBMISSIONS --roster classroom_roster.csv     adds each student's identifier
    python -m instructor canvas-export --gradebook grades.csv --canvas EXPORT.csv --column "Lab 03 (4242)"

Classroom's roster export has the columns identifier, github_username, github_id and name. `gh classroom
clone` names each student's folder ASSIGNMENT-PREFIX-USERNAME. The join never guesses, since a wrong join gives
one student's grade to another:

1. a folder named exactly after a roster username is that student's;
2. otherwise the longest roster username that ends the folder after a "-" (`lab03-template-jo-bob` with both
   `bob` and `jo-bob` on the roster is jo-bob's), provided what comes before it is the assignment prefix the
   rest of the class shares (with only `bob` on the roster, `lab03-template-jo-bob` would leave the prefix
   `lab03-template-jo`: refused, not given to bob);
3. refused, and listed with the reason: a username the roster holds twice, two folders for one roster row,
   a prefix unlike the class's. Their identifier stays empty.

Canvas imports a CSV of the shape its own gradebook export has: the columns Student, ID, SIS User ID,
SIS Login ID and Section identify the student (Canvas matches on them), every further column is an
assignment named "Title (assignment id)", and an optional second row "Points Possible" gives the
maxima. The export command copies the identity columns of the instructor's export, adds the one
assignment column and fills it for each student the roster identifier finds (by SIS Login ID, SIS
User ID, ID or the student's name, in that order; a value two Canvas rows share is refused, not guessed).
Canvas's "Test Student" is left out; an export with one ID twice, or two graded rows for one Canvas
student, is refused whole. A student missing on either side is listed, one per line.
"""

import csv
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from instructor import csvsafe
from instructor.private import open_private

Row = dict[str, str]

CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Section")
CANVAS_MATCH_ORDER = ("SIS Login ID", "SIS User ID", "ID", "Student")
POINTS_POSSIBLE = "Points Possible"
TEST_STUDENT = {"student, test", "test student"}  # Canvas's student view account, in every export
ROSTER_COLUMNS = ("identifier", "github_username")


@dataclass
class Unmatched:
    """Who could not be joined: nobody is dropped silently."""

    without_roster_entry: list[str] = field(default_factory=list)  # graded folders no roster row names
    refused: list[str] = field(default_factory=list)  # "who: why": a join that would have been a guess
    not_submitted: list[str] = field(default_factory=list)  # roster rows with no graded folder
    not_in_canvas: list[str] = field(default_factory=list)  # graded students Canvas does not list
    without_grade: list[str] = field(default_factory=list)  # Canvas students with no grade

    def lines(self) -> list[str]:
        """A heading per kind, then one person per line."""
        labels = {
            "without_roster_entry": "graded, but no roster row names this folder",
            "refused": "not joined, a join would be a guess (fix the folder name or the roster, then rerun)",
            "not_submitted": "on the roster, but no submission was graded",
            "not_in_canvas": "graded, but not in the Canvas export (left out of the import)",
            "without_grade": "in Canvas, but no grade (their cell is left empty)",
        }
        lines = []
        for name, people in vars(self).items():
            if people:
                lines.append(f"{labels[name]} ({len(people)}):")
                lines += [f"    {person}" for person in people]
        return lines


def read_rows(path: str | Path) -> list[Row]:
    """The rows of a CSV file (a spreadsheet's byte-order mark dropped, csvsafe's quotes undone)."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        return [{key: csvsafe.original(value or "") for key, value in row.items() if key is not None}
                for row in csv.DictReader(handle)]


@dataclass
class RosterJoin:
    matches: dict[str, Row] = field(default_factory=dict)  # folder -> its roster row
    refused: dict[str, str] = field(default_factory=dict)  # folder -> why it was not joined
    unmatched: list[str] = field(default_factory=list)  # folders no roster username ends


def join_roster(folders: Sequence[str], roster: Sequence[Row]) -> RosterJoin:
    """Each folder's roster row, by the rules of this module's docstring; the rest refused or unmatched."""
    by_username: dict[str, list[Row]] = defaultdict(list)
    for row in roster:
        username = row.get("github_username", "").strip().lower()
        if username:
            by_username[username].append(row)
    joined = RosterJoin()
    suffixed: dict[str, tuple[str, str]] = {}  # folder -> (prefix, username)
    found: dict[str, str] = {}  # folder -> username
    for folder in folders:
        lowered = folder.lower()
        if lowered in by_username:
            found[folder] = lowered
            continue
        candidates = [name for name in by_username if lowered.endswith("-" + name)]
        if not candidates:
            joined.unmatched.append(folder)
            continue
        username = max(candidates, key=len)
        suffixed[folder] = (lowered[: -len(username) - 1], username)
    prefixes = Counter(prefix for prefix, _ in suffixed.values())
    ranked = prefixes.most_common()
    class_prefix = ranked[0][0] if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]) else None
    for folder, (prefix, username) in suffixed.items():
        if prefix == class_prefix:
            found[folder] = username
        elif class_prefix is None:
            joined.refused[folder] = (f"the folders name the assignment differently ({', '.join(sorted(prefixes))}):"
                                      " rename them to PREFIX-USERNAME")
        else:
            joined.refused[folder] = (f"ends with -{username}, but {prefix!r} is not the class's prefix "
                                      f"{class_prefix!r}: is {username} really this student?")
    claimed: dict[str, list[str]] = defaultdict(list)
    for folder, username in found.items():
        claimed[username].append(folder)
    for folder, username in found.items():
        if len(by_username[username]) > 1:
            joined.refused[folder] = f"the roster has {len(by_username[username])} rows for {username}"
        elif len(claimed[username]) > 1:
            joined.refused[folder] = f"{username} has {len(claimed[username])} folders: {', '.join(claimed[username])}"
        else:
            joined.matches[folder] = by_username[username][0]
    return joined


def add_roster(gradebook: str | Path, roster_csv: str | Path) -> Unmatched:
    """Rewrite the gradebook CSV with the roster's identifier and github_username after `student`."""
    rows = read_rows(gradebook)
    roster = read_rows(roster_csv)
    joined = join_roster([row["student"] for row in rows], roster)
    for row in rows:
        entry = joined.matches.get(row["student"])
        row["identifier"] = entry["identifier"] if entry else ""
        row["github_username"] = entry["github_username"] if entry else ""
    matched = {id(entry) for entry in joined.matches.values()}
    unmatched = Unmatched(
        without_roster_entry=list(joined.unmatched),
        refused=[f"{folder}: {why}" for folder, why in joined.refused.items()],
        not_submitted=[r.get("identifier") or r["github_username"] for r in roster
                       if r.get("github_username", "").strip() and id(r) not in matched],
    )
    columns = list(rows[0]) if rows else ["student"]
    columns = ["student", *ROSTER_COLUMNS] + [c for c in columns if c not in ("student", *ROSTER_COLUMNS)]
    with open_private(gradebook, newline="") as handle:
        writer = csvsafe.writer(handle)
        writer.writerow(columns)
        writer.writerows([row.get(column, "") for column in columns] for row in rows)
    return unmatched


def canvas_row_for(identifier: str, canvas_rows: Sequence[Row]) -> Row | None:
    """The Canvas student that identifier names, trying the columns of CANVAS_MATCH_ORDER in turn.
    Raises LookupError when the first column that matches at all matches two students."""
    wanted = identifier.strip().lower()
    for column in CANVAS_MATCH_ORDER:
        found = [row for row in canvas_rows if row.get(column, "").strip().lower() == wanted]
        if len(found) > 1:
            raise LookupError(f"{len(found)} Canvas students have {column} {identifier!r}")
        if found:
            return found[0]
    return None


def is_test_student(row: Row) -> bool:
    return row.get("Student", "").strip().lower() in TEST_STUDENT


def _refuse_duplicate_ids(students: Sequence[Row], canvas_csv: str | Path) -> None:
    twice = sorted(value for value, count in Counter(row.get("ID", "").strip() for row in students).items()
                   if value and count > 1)
    if twice:
        raise ValueError(f"--canvas {canvas_csv}: the ID {', '.join(twice)} appears on more than one row: "
                         "export the gradebook from Canvas again")


def canvas_export(gradebook: str | Path, canvas_csv: str | Path, column: str, output: str | Path,
                  points_possible: str | None = None) -> Unmatched:
    """Write output, a CSV Canvas's gradebook import accepts, with the gradebook's totals in `column`."""
    graded = read_rows(gradebook)
    if graded and "identifier" not in graded[0]:
        raise ValueError(f"--gradebook {gradebook} has no identifier column: run batch with --roster first")
    from instructor.gradebook import NOT_GRADED  # the total batch writes for a student the grader failed on

    pending = [row["student"] for row in graded if row.get("total") == NOT_GRADED]
    if pending:
        raise ValueError(f"--gradebook {gradebook}: {len(pending)} student(s) not graded (a grader error): "
                         f"{', '.join(pending)}. Regrade them with batch --only-failed first")
    exported = read_rows(canvas_csv)
    if not exported or "Student" not in exported[0]:
        raise ValueError(f"--canvas {canvas_csv} is not a Canvas gradebook export (no Student column): "
                         "export it from Canvas under Grades > Export")
    identity = [name for name in CANVAS_IDENTITY if name in exported[0]]
    points_row = next((row for row in exported if row["Student"].strip() == POINTS_POSSIBLE), None)
    students = [row for row in exported if row is not points_row and not is_test_student(row)]
    _refuse_duplicate_ids(students, canvas_csv)
    unmatched = Unmatched()
    scores: dict[int, str] = {}
    graded_as: dict[int, list[str]] = defaultdict(list)
    for row in graded:
        who = row["identifier"] or row["student"]
        try:
            match = canvas_row_for(row["identifier"], students) if row["identifier"] else None
        except LookupError as error:
            unmatched.refused.append(f"{who}: {error}")
            continue
        if match is None:
            unmatched.not_in_canvas.append(who)
        else:
            scores[id(match)] = row["total"]
            graded_as[id(match)].append(row["student"])
    twice = [f"{row['Student']} ({', '.join(graded_as[id(row)])})" for row in students if len(graded_as[id(row)]) > 1]
    if twice:
        raise ValueError(f"--gradebook {gradebook}: two graded rows map to one Canvas student: {'; '.join(twice)}. "
                         "Keep one folder per student and rerun batch")
    with open_private(output, newline="") as handle:
        writer = csvsafe.writer(handle)
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
