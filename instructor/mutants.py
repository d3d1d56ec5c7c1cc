"""Mutation check: do the test suites catch real student bugs, name them, and pay nothing for nothing?

    python -m instructor mutants [--suite hidden|public|both] [--jobs 2] [--only NAME ...] [--json FILE]

Every mutant of tests/mutants/catalogue.py and bonus.py (the reference with one realistic bug) is
graded. A mutant is CAUGHT when its task loses points under the hidden suite, and under the public
suite as well when the catalogue marks it `public`. An `exclusive` mutant (a loop: slow, not wrong)
must lose points in its own task only. A mutant is NAMED when a failing public test of its task prints
a "Likely cause:" line holding the words of its catalogue `cause`; a Likely cause line without them,
in any test, is a WRONG DIAGNOSIS.

The reference (must lose nothing), the stubs (must score nothing) and the degenerate submissions of
tests/mutants/degenerate.py (zeros, ones, None...: nothing outside their `allowed` tasks) are graded
too, and none of them may get a Likely cause line. When the whole catalogue is graded with the public
suite, at least PUBLIC_CAUGHT_FLOOR of the mutants must be caught publicly and NAMED_FLOOR named.

tests/mutants/second_style.py holds the same mistakes written as other code, and fresh ones (its
FRESH names): they are graded and judged the same way, and reported as a second figure with floors
of their own (SECOND_STYLE_CAUGHT_FLOOR, SECOND_STYLE_NAMED_FLOOR), so that the diagnoses are
measured on code they were not written against.
The command exits 1 if anything is off.

Each submission is graded once through the grader itself (grader.grade, as `python -m grader grade
--suite all --format json`), and its report is split by each test's suite. A mutant is graded on the test
files that can reach its change (instructor.reach), the reference's results standing for the other files;
--every-file grades it on every file.
"""

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from grader.capabilities import scan
from grader.launch import PLAIN, Launcher
from grader.paths import ASSIGNMENT, SOLUTION_FILE, STUB_FILE, SUITES, TESTS
from grader.report import Report, TestResult
from grader.tasks import BY_ID, TASKS, task_order
from instructor import reach
from instructor.anchors import definition_spans, replace_code
from instructor.warm import warm_launcher
from tests.mutants.bonus import BONUS
from tests.mutants.catalogue import CATALOGUE, Mutant
from tests.mutants.degenerate import Degenerate, degenerates
from tests.mutants.second_style import FRESH, SECOND_STYLE

REFERENCE = SOLUTION_FILE
STUBS = ASSIGNMENT
CAUSE_PREFIX = "Likely cause:"
PUBLIC_CAUGHT_FLOOR = 0.90  # of all mutants (core and bonus), caught by the public suite
NAMED_FLOOR = 0.92  # of all mutants, named by a Likely cause line of the public suite (72/78 on 1 Dec)
SECOND_STYLE_CAUGHT_FLOOR = 0.95  # of the second-style mutants, caught by the public suite (44/44 on 1 Dec)
SECOND_STYLE_NAMED_FLOOR = 0.95  # of the second-style mutants, named by the public suite (44/44 on 1 Dec)


class TestLine(NamedTuple):
    """A line of one test's message: the first one of a failure, or a "Likely cause: ..." line."""

    test: str
    status: str
    line: str


@dataclass
class TaskOutcome:
    """One task's result in one suite, for one attention.py."""

    points: float = 0.0  # available
    lost: float = 0.0
    failed: list[TestLine] = field(default_factory=list)
    causes: list[TestLine] = field(default_factory=list)

    @property
    def earned(self) -> float:
        return self.points - self.lost

    def to_json(self) -> dict[str, Any]:
        return {"points": self.points, "lost": self.lost, "failed": [list(item) for item in self.failed],
                "causes": [list(item) for item in self.causes]}


class Cause(NamedTuple):
    """A Likely cause line, and where it was printed."""

    suite: str
    test: str
    line: str


Tasks = dict[str, TaskOutcome]  # one suite's result for one attention.py, by task id


class CatalogueError(Exception):
    """A mutant no longer applies to the reference (its `old` text is missing or ambiguous)."""


def catalogue() -> tuple[Mutant, ...]:
    """Every first-style mutant: the core tasks' and the bonus tasks'."""
    return CATALOGUE + BONUS


def second_style() -> tuple[Mutant, ...]:
    """The second-style mutants (tests/mutants/second_style.py)."""
    return SECOND_STYLE


def every_mutant() -> tuple[Mutant, ...]:
    """The catalogue, then the second-style mutants."""
    return tuple(catalogue()) + tuple(second_style())


def is_second_style(mutant: Mutant) -> bool:
    return mutant in second_style()


def degenerate_submissions() -> list[Degenerate]:
    """The degenerate submissions, built on the current stubs."""
    return degenerates(STUB_FILE.read_text())


def apply(mutant: Mutant, source: str, filename: str = "attention.py") -> str:
    """The mutant's source: source with its edits applied, each found by its code, comments aside
    (instructor.anchors); CatalogueError if one does not apply."""
    functions = BY_ID[mutant.task].functions if mutant.task in BY_ID else ()
    for number, (old, new) in enumerate(mutant.edits, 1):
        source, count = replace_code(source, old, new, definition_spans(source, functions))
        if count != 1:
            raise CatalogueError(
                f"mutant {mutant.name!r}, edit {number}: the code to replace occurs {count} times in "
                f"{filename} (comments aside, and within {', '.join(functions)} where it is in several; expected "
                f"exactly once); update tests/mutants/ to match the reference.\n--- code ---\n{old}\n------------"
            )
    try:
        compile(source, f"{mutant.name}/attention.py", "exec")
    except SyntaxError as error:
        raise CatalogueError(f"mutant {mutant.name!r} is not valid Python: {error}") from None
    return source


def materialize(dest_dir: str | Path, mutants: Iterable[Mutant] | None = None,
                reference: str | Path = REFERENCE) -> list[tuple[Mutant, Path]]:
    """Write dest_dir/<name>/attention.py for each mutant; returns [(mutant, folder), ...]."""
    source = Path(reference).read_text()
    made = []
    for mutant in catalogue() if mutants is None else mutants:
        folder = Path(dest_dir) / mutant.name
        text = apply(mutant, source, Path(reference).name)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "attention.py").write_text(text)
        made.append((mutant, folder))
    return made


def materialize_degenerates(dest_dir: str | Path, chosen: Iterable[Degenerate]) -> list[tuple[Degenerate, Path]]:
    """Write dest_dir/degenerates/<name>/attention.py for each degenerate; returns [(degenerate, folder), ...]."""
    from tests.mutants.degenerate import StubMismatch, source

    stubs = STUB_FILE.read_text()
    made = []
    for degenerate in chosen:
        folder = Path(dest_dir) / "degenerates" / degenerate.name
        try:
            text = source(degenerate, stubs)
        except StubMismatch as error:
            raise CatalogueError(str(error)) from None
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "attention.py").write_text(text)
        made.append((degenerate, folder))
    return made


# -- grading ---------------------------------------------------------------------------------

def likely_causes(message: str | None) -> list[str]:
    """The lines of a test's message that start with "Likely cause:"."""
    lines = (line.strip() for line in (message or "").splitlines())
    return [line for line in lines if line.startswith(CAUSE_PREFIX)]


def split_report(report: Report) -> dict[str, Tasks]:
    """{suite: tasks} from one grader report, each test counted in its own suite."""
    return split_tests(report.tests)


def split_tests(tests: Iterable[TestResult]) -> dict[str, Tasks]:
    """{suite: tasks} from a report's tests, each counted in its own suite."""
    suites: dict[str, Tasks] = {}
    for test in tests:
        tasks = suites.setdefault(test.suite, {})
        entry = tasks.setdefault(test.task, TaskOutcome())
        entry.points += test.max_score
        entry.lost += test.max_score - test.score
        message = test.message or ""
        status = test.status.reported
        if not test.passed:
            entry.failed.append(TestLine(test.name, status, message.strip().split("\n")[0]))
        entry.causes.extend(TestLine(test.name, status, line) for line in likely_causes(message))
    return suites


@dataclass(frozen=True)
class Selection:
    """The test files a mutant is graded on (instructor.reach), in a folder of their own, and the reference's
    results, which stand for the other files' tests."""

    tests_dir: Path
    files: frozenset[str]  # "public/test_sdpa.py", ...
    reference: tuple[TestResult, ...]

    def merged(self, tests: Iterable[TestResult]) -> list[TestResult]:
        """tests (of the selected files), and the reference's results of every other file."""
        return [*tests, *(test for test in self.reference if f"{test.suite}/{Path(test.file).name}" not in self.files)]


def grader_report(impl_dir: str | Path, suite: str, timeout: float = 900.0, attempts: int = 2,
                  launcher: Launcher = PLAIN, selection: Selection | None = None) -> Report:
    """The grader's report of impl_dir on suite (of selection's files only, when given), from a run in which a
    test reported back (attempts tries); RuntimeError when none did."""
    from grader.grade import grade
    from grader.score import MISSING

    tests_dir = selection.tests_dir if selection else None
    for _ in range(attempts):
        report = grade(impl_dir, suite, timeout=timeout, launcher=launcher, tests_dir=tests_dir,
                       partial=selection is not None)
        if any(test.message != MISSING for test in report.tests):
            return report
    flags = [flag.to_json() for flag in report.flags]  # not one test reported back: never graded
    raise RuntimeError(f"no test of --suite {suite} reported a result for {impl_dir}; flags: {flags}")


def grader_suites(impl_dir: str | Path, suites: Sequence[str], timeout: float = 900.0, attempts: int = 2,
                  launcher: Launcher = PLAIN, selection: Selection | None = None) -> dict[str, Tasks]:
    """{suite: tasks} for suites, from one run of the grader itself (`--suite all` for both), started by
    launcher (grade_all passes batch's warm one: the same grades, from processes that imported torch once).
    selection: grade only its files; the reference's results stand for the others."""
    report = grader_report(impl_dir, grader_suite(suites), timeout, attempts, launcher, selection)
    return suites_of(selection.merged(report.tests) if selection else report.tests, suites, impl_dir)


def grader_suite(suites: Sequence[str]) -> str:
    """The grader's --suite for suites: the one, or "all" for both."""
    return suites[0] if len(suites) == 1 else "all"


def suites_of(tests: Iterable[TestResult], suites: Sequence[str], impl_dir: str | Path) -> dict[str, Tasks]:
    """{suite: tasks} for suites from a report's tests; RuntimeError when a suite has none."""
    graded = split_tests(tests)
    absent = [name for name in suites if name not in graded]
    if absent:
        raise RuntimeError(f"the grader ran no test of tests/{absent[0]} for {impl_dir}")
    return {name: graded[name] for name in suites}


def lost(tasks: Tasks | None) -> dict[str, float]:
    """{task: points lost} for the tasks that lost any."""
    return {task: entry.lost for task, entry in (tasks or {}).items() if entry.lost}


def earned(tasks: Tasks | None) -> dict[str, float]:
    """{task: points earned} for the tasks that earned any."""
    return {task: entry.earned for task, entry in (tasks or {}).items() if entry.earned}


def problems_in(mutant: Mutant, suite: str, tasks: Tasks) -> list[str]:
    """Why one suite's tasks do not catch the mutant ([] when they do)."""
    losses = lost(tasks)
    problems = [] if losses.get(mutant.task) else [f"{suite} suite: {mutant.task} loses no points"]
    others = sorted(set(losses) - {mutant.task})
    if mutant.exclusive and others:
        problems.append(f"{suite} suite: other tasks lose points too ({', '.join(others)})")
    return problems


def verdict(mutant: Mutant, public: Tasks | None, hidden: Tasks | None) -> tuple[str, str]:
    """('CAUGHT' | 'MISSED' | 'n/a', why) from each suite's tasks (None = suite not run)."""
    problems: list[str] = []
    judged = False
    for suite, tasks, required in (("hidden", hidden, True), ("public", public, mutant.public)):
        if tasks is None or not required:
            continue
        judged = True
        problems += problems_in(mutant, suite, tasks)
    if not judged:
        return "n/a", "hidden-only mutant, hidden suite not run"
    return ("MISSED", "; ".join(problems)) if problems else ("CAUGHT", "")


# -- diagnoses -------------------------------------------------------------------------------

def names_cause(line: str, cause: str | None) -> bool:
    """True when a Likely cause line holds the cause's words (case-insensitive)."""
    return cause is not None and cause.casefold() in line.casefold()


def diagnosis(mutant: Mutant, public: Tasks | None) -> tuple[bool, str | None]:
    """(named, line): whether a failing public test of the mutant's task names its cause, and the
    Likely cause line to show (the naming one, else the first one, else None)."""
    entry = (public or {}).get(mutant.task, TaskOutcome())
    lines = [cause.line for cause in entry.causes if cause.status != "passed"]
    naming = [line for line in lines if names_cause(line, mutant.cause)]
    if naming:
        return True, naming[0]
    return False, (lines[0] if lines else None)


def all_causes(by_suite: Mapping[str, Tasks | None]) -> list[Cause]:
    """[(suite, test, line)] for every Likely cause line of every graded suite."""
    return [Cause(suite, cause.test, cause.line) for suite, tasks in by_suite.items()
            for entry in (tasks or {}).values() for cause in entry.causes]


def wrong_diagnoses(mutant: Mutant, by_suite: Mapping[str, Tasks]) -> list[Cause]:
    """The Likely cause lines that do not hold the mutant's cause ([] when the catalogue gives none)."""
    if mutant.cause is None:
        return []
    return [item for item in all_causes(by_suite) if not names_cause(item.line, mutant.cause)]


def unearned_points(name: str, by_suite: Mapping[str, Tasks], allowed: frozenset[str] = frozenset()) -> list[str]:
    """Problems for a submission that must earn nothing outside the `allowed` tasks."""
    problems = []
    for suite, tasks in by_suite.items():
        extra = sorted(((task, points) for task, points in earned(tasks).items() if task not in allowed),
                       key=lambda kv: task_order(kv[0]))
        if extra:
            where = f" outside {', '.join(sorted(allowed))}" if allowed else ""
            items = ", ".join(f"{task} {points:g}" for task, points in extra)
            problems.append(f"{name} earns points under {suite} ({items}), expected none{where}")
    return problems


def diagnoses_of(name: str, by_suite: Mapping[str, Tasks]) -> list[str]:
    """Problems for a submission that must get no Likely cause line at all (nothing known is wrong)."""
    return [f"WRONG DIAGNOSIS: {name} gets a Likely cause line in {suite}/{test}: {line}"
            for suite, test, line in all_causes(by_suite)]


# -- the report ------------------------------------------------------------------------------

@dataclass
class Row:
    """One mutant's results."""
    mutant: Mutant
    status: str  # CAUGHT, MISSED, ERROR or n/a
    why: str
    caught_public: bool | None  # None when the public suite was not graded
    named: bool | None  # None when the public suite was not graded
    cause_line: str | None  # the Likely cause line shown for it
    wrong: list[Cause] = field(default_factory=list)  # not holding its cause
    unchecked: list[Cause] = field(default_factory=list)  # [(suite, test, line)] of a mutant with no cause


def judge(mutant: Mutant, by_suite: Mapping[str, Tasks], failed_grading: bool) -> Row:
    """The mutant's row, from the suites it was graded on."""
    public = by_suite.get("public")
    status, why = verdict(mutant, public, by_suite.get("hidden"))
    if failed_grading:
        status, why = "ERROR", "grading failed (see below)"
    named, line = diagnosis(mutant, public) if public is not None else (None, None)
    return Row(
        mutant, status, why,
        caught_public=None if public is None else not problems_in(mutant, "public", public),
        named=named, cause_line=line,
        wrong=wrong_diagnoses(mutant, by_suite),
        unchecked=all_causes(by_suite) if mutant.cause is None else [],
    )


def fractions(rows: Sequence[Row]) -> dict[str, float]:
    """{"mutants": n, "public_caught", "named", "caught": fractions of n} (caught = CAUGHT verdicts)."""
    count = len(rows) or 1
    return {
        "mutants": len(rows),
        "public_caught": sum(1 for row in rows if row.caught_public) / count,
        "named": sum(1 for row in rows if row.named) / count,
        "caught": sum(1 for row in rows if row.status == "CAUGHT") / count,
    }


def second_style_floor_failures(summary: Mapping[str, float]) -> list[str]:
    """The second style's fractions below their floors."""
    failures = []
    if summary["public_caught"] < SECOND_STYLE_CAUGHT_FLOOR:
        failures.append(f"the public suite catches {summary['public_caught']:.1%} of the second-style mutants, "
                        f"below the floor of {SECOND_STYLE_CAUGHT_FLOOR:.0%} "
                        "(instructor/mutants.py SECOND_STYLE_CAUGHT_FLOOR)")
    if summary["named"] < SECOND_STYLE_NAMED_FLOOR:
        failures.append(f"the public suite names {summary['named']:.1%} of the second-style mutants, below the floor "
                        f"of {SECOND_STYLE_NAMED_FLOOR:.0%} (instructor/mutants.py SECOND_STYLE_NAMED_FLOOR)")
    return failures


def floor_failures(summary: Mapping[str, float]) -> list[str]:
    """The fractions below their floors."""
    failures = []
    if summary["public_caught"] < PUBLIC_CAUGHT_FLOOR:
        failures.append(f"the public suite catches {summary['public_caught']:.1%} of the mutants, "
                        f"below the floor of {PUBLIC_CAUGHT_FLOOR:.0%} (instructor/mutants.py PUBLIC_CAUGHT_FLOOR)")
    if summary["named"] < NAMED_FLOOR:
        failures.append(f"the public suite names {summary['named']:.1%} of the mutants, below the floor of "
                        f"{NAMED_FLOOR:.0%} (instructor/mutants.py NAMED_FLOOR)")
    return failures


def describe(tasks: Tasks | None, own: str | None = None) -> str:
    """'sdpa 8/8, mha 3/8' for the tasks that lost points; the mutant's own task first."""
    if tasks is None:
        return "-"
    if tasks and all(entry.lost == entry.points for entry in tasks.values()):
        return f"everything ({sum(entry.points for entry in tasks.values()):g} points)"
    items = sorted(lost(tasks).items(), key=lambda kv: (kv[0] != own, task_order(kv[0])))
    return ", ".join(f"{task} {points:g}/{tasks[task].points:g}" for task, points in items) or "none"


def describe_earned(tasks: Tasks | None) -> str:
    """'divisibility 3/5, heads 1/10' for the tasks that earned points."""
    if tasks is None:
        return "-"
    items = sorted(earned(tasks).items(), key=lambda kv: task_order(kv[0]))
    return ", ".join(f"{task} {points:g}/{tasks[task].points:g}" for task, points in items) or "nothing"


def yes_no(flag: bool | None) -> str:
    return "-" if flag is None else "yes" if flag else "no"


Lookup = Callable[[str, str], Tasks | None]  # (name, suite) -> its tasks, None when not graded


def print_table(rows: Sequence[Row], degenerates: Sequence[tuple[Degenerate, list[str]]], get: Lookup,
                suites: Sequence[str], verbose: bool) -> None:
    width = max([len(row.mutant.name) for row in rows] + [len(d.name) for d, _ in degenerates] + [10]) + 1
    column = 40
    header = (f"{'mutant':<{width}} {'task':<16} {'pub':<4} "
              + " ".join(f"{s + ' suite: points lost':<{column}}" for s in suites) + " caught named verdict")
    print(header)
    print("-" * len(header))
    for name in ("reference", "stubs"):
        cells = " ".join(f"{describe(get(name, s)):<{column}}" for s in suites)
        print(f"{name:<{width}} {'':<16} {'':<4} {cells}")
    for row in rows:
        mutant = row.mutant
        cells = " ".join(f"{describe(get(mutant.name, s), mutant.task):<{column}}" for s in suites)
        why = f"  ({row.why})" if row.why else ""
        print(f"{mutant.name:<{width}} {mutant.task:<16} {yes_no(mutant.public):<4} {cells} "
              f"{yes_no(row.caught_public):<6} {yes_no(row.named):<5} {row.status}{why}")
        if verbose or row.status == "MISSED":
            for suite in suites:
                for task, entry in sorted((get(mutant.name, suite) or {}).items()):
                    for test, outcome, message in entry.failed:
                        print(f"      {suite}/{task}: {test} [{outcome}] {message[:150]}")
    if degenerates:
        print(f"\n{'degenerate':<{width}} {'may earn':<16} "
              + " ".join(f"{s + ' suite: points earned':<{column}}" for s in suites))
    for degenerate, problems in degenerates:
        cells = " ".join(f"{describe_earned(get(degenerate.name, s)):<{column}}" for s in suites)
        allowed = ", ".join(sorted(degenerate.allowed)) or "nothing"
        print(f"{degenerate.name:<{width}} {allowed:<16} {cells} {'FAIL' if problems else 'ok'}")
    if rows and "public" in suites:
        print_diagnoses(rows, width)


def print_diagnoses(rows: Sequence[Row], width: int) -> None:
    print("\nLikely cause lines of the mutants' own public tests:")
    for row in rows:
        text = row.cause_line or "(none)"
        label = "named" if row.named else "WRONG DIAGNOSIS" if row.wrong else "-"
        cause = f"cause {row.mutant.cause!r}" if row.mutant.cause else "no cause"
        print(f"  {row.mutant.name:<{width}} {label:<15} {cause}: {text[:160]}")
        for suite, test, line in row.wrong:
            print(f"      WRONG DIAGNOSIS in {suite}/{test}: {line[:160]}")


def print_second_style(rows: Sequence[Row]) -> None:
    """The second-style figures: all of them, and the fresh mistakes among them."""
    for label, chosen in (("second style", rows), ("fresh mistakes", [r for r in rows if r.mutant.name in FRESH])):
        if not chosen:
            continue
        figures = fractions(chosen)
        count = len(chosen)
        print(f"{label}: public suite catches {round(figures['public_caught'] * count)}/{count} "
              f"({figures['public_caught']:.1%}), names {round(figures['named'] * count)}/{count} "
              f"({figures['named']:.1%}); public + hidden catch {round(figures['caught'] * count)}/{count}")


def print_summary(rows: Sequence[Row], summary: Mapping[str, float] | None) -> None:
    counts = {s: sum(1 for row in rows if row.status == s) for s in ("CAUGHT", "MISSED", "ERROR", "n/a")}
    print(f"\n{counts['CAUGHT']} caught, {counts['MISSED']} missed"
          + (f", {counts['ERROR']} not graded" if counts["ERROR"] else "")
          + (f", {counts['n/a']} not judged" if counts["n/a"] else "") + f" of {len(rows)} mutants")
    if summary:
        def share(key):
            return f"{summary[key]:.1%} ({round(summary[key] * summary['mutants'])}/{summary['mutants']}"

        print(f"public suite catches {share('public_caught')}, floor {PUBLIC_CAUGHT_FLOOR:.0%}); "
              f"names {share('named')}, floor {NAMED_FLOOR:.0%}); public + hidden catch {share('caught')})")
    unchecked = [row.mutant.name for row in rows if row.unchecked]
    if unchecked:
        print(f"note: {len(unchecked)} mutant(s) get Likely cause lines but have no `cause` in the catalogue, "
              f"so those lines are not checked: {', '.join(unchecked)}")


# -- command line ----------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", choices=("hidden", "public", "both"), default="both")
    parser.add_argument("--jobs", type=int, default=2, help="gradings at a time (default 2)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutants and degenerates")
    parser.add_argument("--keep", metavar="DIR", help="write the mutants into DIR and keep them")
    parser.add_argument("--json", metavar="FILE", help="also write every result as JSON")
    parser.add_argument("--verbose", "-v", action="store_true", help="list each mutant's failing tests")
    parser.add_argument("--every-file", action="store_true",
                        help="grade each mutant on every test file, not only on those that can reach its change "
                             "(slower: the check of that selection, instructor.reach)")


def grade_all(targets: Sequence[tuple[str, Path]], suites: Sequence[str], jobs: int,
              selected: Mapping[str, tuple[Path, frozenset[str]]] | None = None,
              ) -> tuple[dict[tuple[str, str], Tasks], dict[tuple[str, str], str]]:
    """{(name, suite): tasks} for [(name, folder)] x suites, one grading per target, `jobs` at a time, through
    batch's warm launcher (instructor.warm), each worker's view hiding every target's folder.
    selected: {name: (tests folder, its files)} of the targets graded on some test files alone (instructor.reach),
    the reference's results standing for the others'."""
    selected = selected or {}
    folders = [folder for _, folder in targets] + [tests_dir for tests_dir, _ in selected.values()]
    hide = tuple(sorted({str(Path(folder).resolve().parent) for folder in folders}))
    suite = grader_suite(suites)
    with warm_launcher(hide) as launcher, ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        # first in the queue: every selected target waits for it
        reference = pool.submit(grader_report, REFERENCE.parent, suite, launcher=launcher) if selected else None

        def reference_suites() -> dict[str, Tasks]:
            assert reference is not None
            return suites_of(reference.result().tests, suites, REFERENCE.parent)

        def on_selection(folder: Path, tests_dir: Path, files: frozenset[str]) -> dict[str, Tasks]:
            assert reference is not None
            fill = tuple(reference.result().tests)
            return grader_suites(folder, suites, launcher=launcher, selection=Selection(tests_dir, files, fill))

        futures = {}
        for name, folder in targets:
            if name in selected:
                futures[name] = pool.submit(on_selection, folder, *selected[name])
            elif reference is not None and Path(folder) == REFERENCE.parent:
                futures[name] = pool.submit(reference_suites)
            else:
                futures[name] = pool.submit(grader_suites, folder, suites, launcher=launcher)
        results: dict[tuple[str, str], Tasks] = {}
        errors: dict[tuple[str, str], str] = {}
        for number, (name, future) in enumerate(futures.items(), 1):
            try:
                results.update({(name, suite): tasks for suite, tasks in future.result().items()})
                outcome = "graded"
            except Exception as error:  # reported as a failure of the check, never as CAUGHT
                errors.update({(name, suite): f"{type(error).__name__}: {error}" for suite in suites})
                outcome = "ERROR grading"
            print(f"  [{number}/{len(futures)}] {outcome} {name}", file=sys.stderr, flush=True)
    return results, errors


def select_files(made: Sequence[tuple[Mutant, Path]], suites: Sequence[str],
                 dest: Path) -> dict[str, tuple[Path, frozenset[str]]]:
    """{mutant name: (tests folder, files)} for the mutants that can be graded on some of the suites' test files
    (instructor.reach: the files whose tests can reach the mutant's change), one folder per set of files in
    dest; a mutant that can reach every file, or whose file the syntax scan refuses (every test then fails), is
    left out: graded on the suites themselves."""
    every = reach.record(TESTS, suites, REFERENCE)
    before = REFERENCE.read_text()
    folders: dict[frozenset[str], Path] = {}
    selected = {}
    for mutant, folder in made:
        after = (folder / REFERENCE.name).read_text()
        if scan(after.encode()):  # refused before any test runs: every test of every file fails
            continue
        files = reach.files_to_grade(every, before, after)
        if files is None or set(files) >= set(every):
            continue
        chosen = frozenset(files)
        if chosen not in folders:
            folders[chosen] = reach.selection(TESTS, chosen, dest / f"files{len(folders)}")
        selected[mutant.name] = (folders[chosen], chosen)
    return selected


def choose(only: Sequence[str] | None) -> tuple[Sequence[Mutant], Sequence[Degenerate]]:
    """(mutants, degenerates) to grade: those named in only, or all; ValueError for unknown names."""
    mutants, degenerates = every_mutant(), degenerate_submissions()
    if not only:
        return mutants, degenerates
    unknown = set(only) - {m.name for m in mutants} - {d.name for d in degenerates}
    if unknown:
        raise ValueError(f"unknown mutant(s): {', '.join(sorted(unknown))}")
    return [m for m in mutants if m.name in only], [d for d in degenerates if d.name in only]


def warn_missing_test_files(suites: Iterable[str]) -> None:
    for suite in suites:
        names = {p.name for p in (TESTS / suite).glob("test_*.py")}
        missing = sorted(f"test_{t.id}.py" for t in TASKS if f"test_{t.id}.py" not in names)
        if missing:
            print(f"warning: tests/{suite} has no {', '.join(missing)}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    suites = SUITES if args.suite == "both" else (args.suite,)
    try:
        mutants, degenerates = choose(args.only)
    except ValueError as unknown:
        print(unknown, file=sys.stderr)
        return 2
    warn_missing_test_files(suites)

    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        try:
            made = materialize(Path(args.keep or tmp), mutants)
            made_degenerates = materialize_degenerates(Path(args.keep or tmp), degenerates)
        except CatalogueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        targets = ([("reference", REFERENCE.parent), ("stubs", STUBS)] + [(m.name, folder) for m, folder in made]
                   + [(d.name, folder) for d, folder in made_degenerates])
        selected = {} if args.every_file else select_files(made, suites, Path(tmp) / "selections")
        results, errors = grade_all(targets, suites, args.jobs, selected)

    def get(name, suite):
        return results.get((name, suite))

    def by_suite(name):
        return {suite: get(name, suite) for suite in suites if get(name, suite) is not None}

    failures = [f"grading {name} on {suite} failed: {error}" for (name, suite), error in errors.items()]
    reference, stubs = by_suite("reference"), by_suite("stubs")
    failures += [f"the reference loses points under {suite}: {describe(tasks)}"
                 for suite, tasks in reference.items() if lost(tasks)]
    failures += diagnoses_of("the reference", reference)
    failures += unearned_points("the stubs", stubs) + diagnoses_of("the stubs", stubs)
    checked_degenerates = []
    for degenerate, _ in made_degenerates:
        name, graded = f"degenerate {degenerate.name}", by_suite(degenerate.name)
        problems = unearned_points(name, graded, degenerate.allowed) + diagnoses_of(name, graded)
        checked_degenerates.append((degenerate, problems))
        failures += problems
    rows = [judge(m, by_suite(m.name), any((m.name, s) in errors for s in suites)) for m, _ in made]
    for row in rows:
        if row.status == "MISSED":
            failures.append(f"{row.mutant.name} MISSED: {row.why}")
        failures += [f"WRONG DIAGNOSIS: {row.mutant.name} (cause {row.mutant.cause!r}) gets {line!r} in {suite}/{test}"
                     for suite, test, line in row.wrong]
    first = [row for row in rows if not is_second_style(row.mutant)]
    second = [row for row in rows if is_second_style(row.mutant)]
    summary = fractions(first) if "public" in suites and first else None
    if summary and not args.only:
        failures += floor_failures(summary)
    if "public" in suites and second and not args.only:
        failures += second_style_floor_failures(fractions(second))

    print_table(rows, checked_degenerates, get, suites, args.verbose)
    print_summary(first, summary)
    if "public" in suites:
        print_second_style(second)
    for failure in failures:
        print(f"FAIL: {failure}")
    if args.json:
        write_json(args.json, suites, results, rows, checked_degenerates, get, summary, errors, failures)
    return 1 if failures else 0


def write_json(path: str | Path, suites: Sequence[str], results: Mapping[tuple[str, str], Tasks], rows: Sequence[Row],
               degenerates: Sequence[tuple[Degenerate, list[str]]], get: Lookup, summary: Mapping[str, float] | None,
               errors: Mapping[tuple[str, str], str], failures: Sequence[str]) -> None:
    Path(path).write_text(json.dumps({
        "suites": list(suites),
        "results": {f"{name}:{suite}": {task: entry.to_json() for task, entry in tasks.items()}
                    for (name, suite), tasks in results.items()},
        "mutants": [{
            "name": row.mutant.name, "task": row.mutant.task, "public": row.mutant.public,
            "verdict": row.status, "why": row.why, "caught_public": row.caught_public,
            "cause": row.mutant.cause, "named": row.named, "cause_line": row.cause_line,
            "wrong_diagnoses": [list(item) for item in row.wrong],
            "unchecked_diagnoses": [list(item) for item in row.unchecked],
        } for row in rows],
        "degenerates": [{
            "name": degenerate.name, "allowed": sorted(degenerate.allowed),
            "earned": {suite: earned(get(degenerate.name, suite)) for suite in suites},
            "problems": problems,
        } for degenerate, problems in degenerates],
        "summary": summary,
        "floors": {"public_caught": PUBLIC_CAUGHT_FLOOR, "named": NAMED_FLOOR,
                   "second_style_public_caught": SECOND_STYLE_CAUGHT_FLOOR,
                   "second_style_named": SECOND_STYLE_NAMED_FLOOR},
        "second_style": [row.mutant.name for row in rows if is_second_style(row.mutant)],
        "fresh": sorted(FRESH),
        "errors": {f"{name}:{suite}": error for (name, suite), error in errors.items()},
        "failures": failures,
    }, indent=2))

