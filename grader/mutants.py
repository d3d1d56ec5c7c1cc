"""Mutation check: do the test suites catch real student bugs?

    python -m grader.mutants [--suite hidden|public|both] [--jobs 2] [--only NAME ...] [--json FILE]

Every mutant of tests/mutants/catalogue.py (the reference with one realistic bug) is graded. A mutant
is CAUGHT when its task loses points under the hidden suite, and under the public suite as well when
the catalogue marks it `public`. An `exclusive` mutant (a loop: slow, not wrong) must lose points in its
own task only. The command also grades the reference (must lose nothing) and the stubs (must score
nothing), and exits 1 if anything is off.

Grading goes through the grader itself (grader.grade, as `python -m grader grade --format json`).
"""

import argparse
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader import REPO
from grader.tasks import TASKS, task_order

REFERENCE = REPO / "solutions" / "attention.py"
STUBS = REPO / "assignment"
SUITES = ("public", "hidden")


class CatalogueError(Exception):
    """A mutant no longer applies to the reference (its `old` text is missing or ambiguous)."""


def catalogue():
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.mutants.bonus import BONUS
    from tests.mutants.catalogue import CATALOGUE

    return CATALOGUE + BONUS


def apply(mutant, source, filename="attention.py"):
    """The mutant's source: source with its edits applied; CatalogueError if one does not apply."""
    for number, (old, new) in enumerate(mutant.edits, 1):
        count = source.count(old)
        if count != 1:
            raise CatalogueError(
                f"mutant {mutant.name!r}, edit {number}: the text to replace occurs {count} times in "
                f"{filename} (expected exactly once); update tests/mutants/catalogue.py to match the "
                f"reference.\n--- text ---\n{old}\n------------"
            )
        source = source.replace(old, new)
    try:
        compile(source, f"{mutant.name}/attention.py", "exec")
    except SyntaxError as error:
        raise CatalogueError(f"mutant {mutant.name!r} is not valid Python: {error}") from None
    return source


def materialize(dest_dir, mutants=None, reference=REFERENCE):
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


# -- grading ---------------------------------------------------------------------------------
# A suite's result for one attention.py is {task: {"lost": points, "points": available,
# "failed": [(test name, status, first line of its message), ...]}}.

def grader_tasks(impl_dir, suite, timeout=900.0, attempts=2):
    """Through the grader itself: `python -m grader grade --suite SUITE --format json`."""
    from grader.grade import grade
    from grader.score import MISSING

    for _ in range(attempts):
        report = grade(impl_dir, suite, timeout=timeout)
        if any(test["message"] != MISSING for test in report["tests"]):
            break
    else:  # not one test reported back: the run itself failed, the mutant was never graded
        raise RuntimeError(f"no test of tests/{suite} reported a result for {impl_dir}; flags: {report['flags']}")
    tasks = {}
    for test in report["tests"]:
        entry = tasks.setdefault(test["task"], {"lost": 0.0, "points": 0.0, "failed": []})
        entry["points"] += test["max_score"]
        entry["lost"] += test["max_score"] - test["score"]
        if test["status"] != "passed":
            entry["failed"].append((test["name"], test["status"], (test["message"] or "").strip().split("\n")[0]))
    return tasks


def lost(tasks):
    """{task: points lost} for the tasks that lost any."""
    return {task: entry["lost"] for task, entry in (tasks or {}).items() if entry["lost"]}


def verdict(mutant, public, hidden):
    """('CAUGHT' | 'MISSED' | 'n/a', why) from each suite's tasks (None = suite not run)."""
    problems = []
    judged = False
    for suite, tasks, required in (("hidden", hidden, True), ("public", public, mutant.public)):
        if tasks is None or not required:
            continue
        judged = True
        if not lost(tasks).get(mutant.task):
            problems.append(f"{suite} suite: {mutant.task} loses no points")
        others = sorted(set(lost(tasks)) - {mutant.task})
        if mutant.exclusive and others:
            problems.append(f"{suite} suite: other tasks lose points too ({', '.join(others)})")
    if not judged:
        return "n/a", "hidden-only mutant, hidden suite not run"
    return ("MISSED", "; ".join(problems)) if problems else ("CAUGHT", "")


def describe(tasks, own=None):
    """'sdpa 8/8, mha 3/8' for the tasks that lost points; the mutant's own task first."""
    if tasks is None:
        return "-"
    if tasks and all(entry["lost"] == entry["points"] for entry in tasks.values()):
        return f"everything ({sum(entry['points'] for entry in tasks.values()):g} points)"
    items = sorted(lost(tasks).items(), key=lambda kv: (kv[0] != own, task_order(kv[0])))
    return ", ".join(f"{task} {points:g}/{tasks[task]['points']:g}" for task, points in items) or "none"


# -- command line ----------------------------------------------------------------------------

def build_parser():
    parser = argparse.ArgumentParser(prog="python -m grader.mutants", description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=("hidden", "public", "both"), default="both")
    parser.add_argument("--jobs", type=int, default=2, help="gradings at a time (default 2)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutants")
    parser.add_argument("--keep", metavar="DIR", help="write the mutants into DIR and keep them")
    parser.add_argument("--json", metavar="FILE", help="also write every result as JSON")
    parser.add_argument("--verbose", "-v", action="store_true", help="list each mutant's failing tests")
    return parser


def grade_all(targets, suites, jobs):
    """{(name, suite): tasks} for [(name, folder)] x suites, `jobs` gradings at a time."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {(name, suite): pool.submit(grader_tasks, folder, suite) for name, folder in targets for suite in suites}
        results, errors = {}, {}
        for number, (key, future) in enumerate(futures.items(), 1):
            try:
                results[key] = future.result()
                outcome = "graded"
            except Exception as error:  # reported as a failure of the check, never as CAUGHT
                errors[key] = f"{type(error).__name__}: {error}"
                outcome = "ERROR grading"
            print(f"  [{number}/{len(futures)}] {outcome} {key[0]} ({key[1]})", file=sys.stderr, flush=True)
    return results, errors


def main(argv=None):
    args = build_parser().parse_args(argv)
    suites = SUITES if args.suite == "both" else (args.suite,)
    mutants = catalogue()
    if args.only:
        unknown = set(args.only) - {m.name for m in mutants}
        if unknown:
            print(f"unknown mutant(s): {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        mutants = [m for m in mutants if m.name in args.only]
    for suite in suites:
        names = {p.name for p in (REPO / "tests" / suite).glob("test_*.py")}
        missing = sorted(f"test_{t.id}.py" for t in TASKS if f"test_{t.id}.py" not in names)
        if missing:
            print(f"warning: tests/{suite} has no {', '.join(missing)}", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        try:
            made = materialize(Path(args.keep or tmp), mutants)
        except CatalogueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        targets = [("reference", REFERENCE.parent), ("stubs", STUBS)] + [(m.name, folder) for m, folder in made]
        results, errors = grade_all(targets, suites, args.jobs)

    def get(name, suite):
        return results.get((name, suite))

    failures = [f"grading {name} on {suite} failed: {error}" for (name, suite), error in errors.items()]
    for suite in suites:
        reference, stubs = get("reference", suite), get("stubs", suite)
        if reference is None or stubs is None:
            continue
        if lost(reference):
            failures.append(f"the reference loses points under {suite}: {describe(reference)}")
        scored = sum(entry["points"] - entry["lost"] for entry in stubs.values())
        if scored:
            failures.append(f"the stubs score {scored:g} points under {suite}")
    rows = []
    for mutant, _ in made:
        status, why = verdict(mutant, get(mutant.name, "public"), get(mutant.name, "hidden"))
        if any((mutant.name, suite) in errors for suite in suites):
            status, why = "ERROR", "grading failed (see below)"
        rows.append((mutant, status, why))
        if status == "MISSED":
            failures.append(f"{mutant.name} MISSED: {why}")

    width = max([len(m.name) for m in mutants] + [len("reference")]) + 1
    column = 40
    header = (f"{'mutant':<{width}} {'task':<16} {'pub':<4} "
              + " ".join(f"{s + ' suite: points lost':<{column}}" for s in suites) + " verdict")
    print(header)
    print("-" * len(header))
    for name in ("reference", "stubs"):
        cells = " ".join(f"{describe(get(name, s)):<{column}}" for s in suites)
        print(f"{name:<{width}} {'':<16} {'':<4} {cells}")
    for mutant, status, why in rows:
        cells = " ".join(f"{describe(get(mutant.name, s), mutant.task):<{column}}" for s in suites)
        flag = "yes" if mutant.public else "no"
        print(f"{mutant.name:<{width}} {mutant.task:<16} {flag:<4} {cells} {status}" + (f"  ({why})" if why else ""))
        if args.verbose or status == "MISSED":
            for suite in suites:
                for task, entry in sorted((get(mutant.name, suite) or {}).items()):
                    for test, outcome, message in entry["failed"]:
                        print(f"      {suite}/{task}: {test} [{outcome}] {message[:150]}")
    counts = {s: sum(1 for _, status, _ in rows if status == s) for s in ("CAUGHT", "MISSED", "ERROR", "n/a")}
    print(f"\n{counts['CAUGHT']} caught, {counts['MISSED']} missed"
          + (f", {counts['ERROR']} not graded" if counts["ERROR"] else "")
          + (f", {counts['n/a']} not judged" if counts["n/a"] else "") + f" of {len(rows)} mutants")
    for failure in failures:
        print(f"FAIL: {failure}")

    if args.json:
        Path(args.json).write_text(json.dumps({
            "suites": list(suites),
            "results": {f"{name}:{suite}": tasks for (name, suite), tasks in results.items()},
            "mutants": [{"name": m.name, "task": m.task, "public": m.public, "verdict": status, "why": why}
                        for m, status, why in rows],
            "errors": {f"{name}:{suite}": error for (name, suite), error in errors.items()},
            "failures": failures,
        }, indent=2))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
