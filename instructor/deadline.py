"""batch --deadline: which commit of each student's clone is graded, how late it is and what that costs.

The students' folders are git clones; nothing here changes them. The graded commit's attention.py files are
read with `git cat-file` (blobs, no checkout, no filter or hook of the student's repository runs) into a
private folder of the staff's, which is graded in place of the student's folder.

Commit dates are the committer dates git recorded on the student's machine: a student can set them to
anything. docs/instructors.md says which cut-off to trust instead (GitHub's record of each push).
"""

import csv
import math
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from grader.paths import IMPL_NAME

DAY = timedelta(days=1)
GIT_TIMEOUT = 60.0  # seconds for one git command on one student's clone
# Settings no student's repository configuration may override: nothing of theirs runs on the staff's machine.
SAFE_GIT = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*")
POLICY_FORMS = "none, penalty:PCT_PER_DAY[:MAX_DAYS] or grade-late"


@dataclass(frozen=True)
class LatePolicy:
    """What a commit after the deadline counts for. none: nothing (the last commit before the deadline is
    graded). penalty: the last commit up to max_days after the deadline is graded, its total cut by
    percent_per_day for each day or part of a day late. grade-late: the newest commit is graded in full,
    its lateness recorded."""

    kind: str  # "none" | "penalty" | "grade-late"
    percent_per_day: float = 0.0
    max_days: int | None = None


def parse_policy(text: str) -> LatePolicy:
    """--late-policy's value; ValueError (one line) when it is none of the forms."""
    if text in ("none", "grade-late"):
        return LatePolicy(text)
    match = re.fullmatch(r"penalty:(\d+(?:\.\d+)?)(?::(\d+))?", text)
    if not match or not 0 < float(match[1]) <= 100:
        raise ValueError(f"--late-policy {text}: write {POLICY_FORMS} (PCT between 0 and 100, e.g. penalty:10:5)")
    return LatePolicy("penalty", float(match[1]), int(match[2]) if match[2] else None)


def parse_time(text: str, what: str = "--deadline") -> datetime:
    """An ISO 8601 time with its offset (2026-12-04T23:59:00+01:00, or Z); ValueError (one line) otherwise: a
    time without an offset would be read in the grading machine's zone, not the course's."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{what} {text!r}: not an ISO time: write it as 2026-12-04T23:59:00+01:00") from None
    if when.tzinfo is None:
        raise ValueError(f"{what} {text!r}: give its UTC offset (+01:00, or Z for UTC): a bare time is ambiguous")
    return when


def read_extensions(path: str | Path) -> dict[str, datetime]:
    """{student: their deadline} from a CSV with columns student,deadline; ValueError naming the row."""
    fix = "give a CSV with the columns student,deadline (one row per student with an extension)"
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            columns = reader.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise ValueError(f"--extensions {path}: not a readable CSV file ({error}): {fix}") from None
    if not {"student", "deadline"} <= set(columns):
        raise ValueError(f"--extensions {path}: no student and deadline columns (it has {', '.join(columns)}): {fix}")
    deadlines: dict[str, datetime] = {}
    for number, row in enumerate(rows, start=2):
        student = (row["student"] or "").strip()
        if student in deadlines:
            raise ValueError(f"--extensions {path} line {number}: {student} has a second row: keep one")
        deadlines[student] = parse_time(row["deadline"] or "", f"--extensions {path} line {number}:")
    return deadlines


@dataclass(frozen=True)
class Deadline:
    """batch's --deadline, --extensions and --late-policy, as one value."""

    at: datetime
    extensions: Mapping[str, datetime] = field(default_factory=dict)  # {student, as the gradebook names them: ...}
    policy: LatePolicy = LatePolicy("none")

    def of(self, student: str) -> datetime:
        return self.extensions.get(student, self.at)


@dataclass(frozen=True)
class Commit:
    sha: str
    when: datetime  # the committer date, as the student's machine wrote it

    def __str__(self) -> str:
        return f"{self.sha[:10]} ({self.when.isoformat()})"


@dataclass(frozen=True)
class Checkout:
    """The commit graded for one student, and what its lateness costs."""

    deadline: datetime
    graded: Commit | None  # None: no commit to grade (none before the deadline, or no git history)
    late: tuple[Commit, ...]  # every commit after the deadline, oldest first
    days_late: int  # of the graded commit: each day or part of a day counts
    penalty_percent: float
    why: str = ""  # when graded is None

    def columns(self) -> dict[str, str | float]:  # LATE_COLUMNS
        """The gradebook's columns for this student."""
        return {"deadline": self.deadline.isoformat(), "commit": self.graded.sha if self.graded else "",
                "committed": self.graded.when.isoformat() if self.graded else "", "late_commits": len(self.late),
                "days_late": self.days_late, "penalty_percent": self.penalty_percent}

    def penalized(self, total: float) -> float:
        return round(total * (1 - self.penalty_percent / 100), 2)

    def flag_text(self) -> str:
        """The words of the student's flag: the late commits, and which one was graded; "" for none."""
        if not self.late:
            return ""
        shown = ", ".join(str(commit) for commit in self.late[-3:])
        more = f" (the last 3 of {len(self.late)})" if len(self.late) > 3 else ""
        graded = f"graded {self.graded.sha[:10]}" if self.graded else "nothing graded"
        cost = f", {self.days_late} day(s) late" if self.days_late else ""
        cost += f": -{self.penalty_percent:g}%" if self.penalty_percent else ""
        return f"late: {len(self.late)} commit(s) after {self.deadline.isoformat()}: {shown}{more}; {graded}{cost}"


def choose(history: list[Commit], deadline: datetime, policy: LatePolicy) -> Checkout:
    """The commit graded under policy, from history (newest first, as git log lists it)."""
    late = tuple(sorted((commit for commit in history if commit.when > deadline), key=lambda commit: commit.when))
    if policy.kind == "none":
        cutoff: datetime | None = deadline
    elif policy.kind == "penalty" and policy.max_days is not None:
        cutoff = deadline + DAY * policy.max_days
    else:  # grade-late, or a penalty without a limit: the newest commit
        cutoff = None
    candidates = [commit for commit in history if cutoff is None or commit.when <= cutoff]
    if not candidates:
        return Checkout(deadline, None, late, 0, 0.0, f"no commit before {deadline.isoformat()}")
    graded = max(candidates, key=lambda commit: commit.when)  # the last by date; the first listed on a tie
    days = max(0, math.ceil((graded.when - deadline) / DAY))
    percent = min(100.0, policy.percent_per_day * days) if policy.kind == "penalty" else 0.0
    return Checkout(deadline, graded, late, days, percent)


def _git(folder: Path, *args: str) -> bytes:
    return subprocess.run(["git", *SAFE_GIT, "-C", str(folder), *args], capture_output=True, check=True,
                          timeout=GIT_TIMEOUT).stdout


def history(folder: str | Path) -> list[Commit] | None:
    """Every commit reachable from the clone's HEAD, newest first; None when folder is no git clone (or has no
    commit)."""
    folder = Path(folder)
    if not (folder / ".git").exists():
        return None
    try:
        out = _git(folder, "log", "--format=%H %cI", "HEAD").decode()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    commits = []
    for line in out.splitlines():
        sha, _, when = line.partition(" ")
        commits.append(Commit(sha, datetime.fromisoformat(when.replace("Z", "+00:00"))))
    return commits


def export(folder: str | Path, commit: Commit, dest: str | Path) -> Path:
    """dest holding the commit's attention.py files at their paths (regular files only: a link is left out, as
    grading would refuse it); dest is made."""
    dest = Path(dest)
    dest.mkdir(parents=True)
    listing = _git(Path(folder), "ls-tree", "-r", "-z", commit.sha).split(b"\0")
    for entry in filter(None, listing):
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, blob = meta.decode().split()
        path = Path(raw_path.decode(errors="surrogateescape"))
        if kind != "blob" or mode not in ("100644", "100755") or path.name != IMPL_NAME or ".." in path.parts:
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_git(Path(folder), "cat-file", "blob", blob))
    return dest


LATE_COLUMNS = ("deadline", "commit", "committed", "late_commits", "days_late", "penalty_percent")
NO_HISTORY = "no git history: graded as found, the deadline not checked"


def checkout_all(folders: list[Path], deadline: Deadline, workdir: Path,
                 shown: Mapping[str, str]) -> tuple[list[Path], dict[str, Checkout]]:
    """(the folders to grade, {folder name: its Checkout}): each clone's chosen commit exported under workdir,
    in a folder of the student's name; a folder without git history is graded as found and has no Checkout."""
    graded, chosen = [], {}
    for folder in folders:
        commits = history(folder)
        if commits is None:
            graded.append(folder)
            continue
        checkout = chosen[folder.name] = choose(commits, deadline.of(shown[folder.name]), deadline.policy)
        dest = workdir / folder.name
        if checkout.graded is None:
            dest.mkdir()  # graded as missing: nothing was committed in time
        else:
            export(folder, checkout.graded, dest)
        graded.append(dest)
    return graded, chosen


def unknown_students(deadline: Deadline, students: set[str]) -> list[str]:
    """The students --extensions names that have no folder in the class (a typo gives no one the extension)."""
    return sorted(set(deadline.extensions) - students)
