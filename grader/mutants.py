"""Mutation check: do the test suites catch real student bugs?

    python -m grader.mutants [--suite hidden|public|both] [--jobs 2] [--only NAME ...] [--json FILE]

Every mutant of tests/mutants/catalogue.py (the reference with one realistic bug) is graded. A mutant
is CAUGHT when its task loses points under the hidden suite, and under the public suite as well when
the catalogue marks it `public`. An `exclusive` mutant (a loop: slow, not wrong) must lose points in its
own task only. The command also grades the reference (must lose nothing) and the stubs (must score
nothing), and exits 1 if anything is off.

Until `python -m grader grade --format json` exists, grading is `run_pytest_tasks`: pytest with a
junit XML report, and each test's points and task read from its markers by this module loaded as a
pytest plugin (-p grader.mutants).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
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
    from tests.mutants.catalogue import CATALOGUE

    return CATALOGUE


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


# -- grading (small on purpose: to be replaced by `python -m grader grade --format json`) ---------

def pytest_collection_modifyitems(items):
    """Plugin hook (-p grader.mutants): put each test's task and points into the junit XML."""
    for item in items:
        task = item.get_closest_marker("task")
        points = item.get_closest_marker("points")
        item.user_properties.append(("task", task.args[0] if task else ""))
        item.user_properties.append(("points", points.args[0] if points else 0))


def run_pytest_tasks(impl_dir, suite, timeout=900):
    """{task: [points lost, points available]} for the attention.py in impl_dir under tests/<suite>."""
    with tempfile.TemporaryDirectory(prefix="mutant-junit-") as tmp:
        junit = Path(tmp) / "junit.xml"
        command = [
            sys.executable, "-m", "pytest", f"tests/{suite}", "--impl", str(impl_dir), "-q",
            "-p", "no:cacheprovider", "-p", "grader.mutants", "--junitxml", str(junit),
        ]
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
        env.pop("GRADER_REPORT_FD", None)
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
        if done.returncode not in (0, 1) or not junit.exists():
            raise RuntimeError(
                f"pytest on tests/{suite} with --impl {impl_dir} exited with {done.returncode}:\n"
                f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
        tasks = {}
        for case in ET.parse(junit).iter("testcase"):
            props = {p.get("name"): p.get("value") for p in case.iter("property")}
            entry = tasks.setdefault(props.get("task", ""), [0, 0])
            points = int(props.get("points", 0))
            entry[1] += points
            if case.find("failure") is not None or case.find("error") is not None:
                entry[0] += points
        return tasks


def lost(tasks):
    """{task: points lost} for the tasks that lost any."""
    return {task: entry[0] for task, entry in (tasks or {}).items() if entry[0]}


def verdict(mutant, public, hidden):
    """('CAUGHT' | 'MISSED' | 'n/a', why) from {task: [lost, available]} per suite (None = not run)."""
    problems = []
    judged = False
    for suite, tasks, required in (("hidden", hidden, True), ("public", public, mutant.public)):
        if tasks is None or not required:
            continue
        judged = True
        if not lost(tasks).get(mutant.task):
            problems.append(f"{suite} suite: {mutant.task} loses no points")
        if mutant.exclusive and set(lost(tasks)) - {mutant.task}:
            others = ", ".join(sorted(set(lost(tasks)) - {mutant.task}))
            problems.append(f"{suite} suite: other tasks lose points too ({others})")
    if not judged:
        return "n/a", "public-only run of a hidden-only mutant"
    return ("MISSED", "; ".join(problems)) if problems else ("CAUGHT", "")


def describe(tasks, own=None):
    """'sdpa 8/8, mha 3/8' for the tasks that lost points; the mutant's own task first."""
    if tasks is None:
        return "-"
    items = sorted(lost(tasks).items(), key=lambda kv: (kv[0] != own, task_order(kv[0])))
    return ", ".join(f"{task} {points}/{tasks[task][1]}" for task, points in items) or "none"


# -- command line ----------------------------------------------------------------------------

def build_parser():
    parser = argparse.ArgumentParser(prog="python -m grader.mutants", description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=("hidden", "public", "both"), default="both")
    parser.add_argument("--jobs", type=int, default=2, help="pytest runs at a time (default 2)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutants")
    parser.add_argument("--keep", metavar="DIR", help="write the mutants into DIR and keep them")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    return parser


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
        root = Path(args.keep or tmp)
        try:
            made = materialize(root, mutants)
        except CatalogueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        targets = [("reference", REFERENCE.parent), ("stubs", STUBS)] + [(m.name, folder) for m, folder in made]
        jobs = [(name, folder, suite) for name, folder in targets for suite in suites]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {(name, suite): pool.submit(run_pytest_tasks, folder, suite) for name, folder, suite in jobs}
            results = {}
            for key, future in futures.items():
                results[key] = future.result()
                print(f"  graded {key[0]} ({key[1]})", file=sys.stderr, flush=True)

    def get(name, suite):
        return results.get((name, suite))

    failures = []
    rows = []
    for name in ("reference", "stubs"):
        for suite in suites:
            tasks = get(name, suite)
            total = sum(entry[1] for entry in tasks.values())
            lost_points = sum(entry[0] for entry in tasks.values())
            if name == "reference" and lost_points:
                failures.append(f"the reference loses {lost_points} points under {suite}: {describe(tasks)}")
            if name == "stubs" and lost_points != total:
                failures.append(f"the stubs score {total - lost_points} of {total} points under {suite}")
    for mutant, _ in made:
        status, why = verdict(mutant, get(mutant.name, "public"), get(mutant.name, "hidden"))
        rows.append((mutant, status, why))
        if status == "MISSED":
            failures.append(f"{mutant.name} MISSED: {why}")

    width = max(len(m.name) for m in mutants) + 1
    header = f"{'mutant':<{width}} {'task':<16} {'pub':<4} " + " ".join(f"{s + ' lost':<34}" for s in suites) + " verdict"
    print(header)
    print("-" * len(header))
    for name in ("reference", "stubs"):
        cells = " ".join(f"{describe(get(name, s)):<34}" for s in suites)
        print(f"{name:<{width}} {'':<16} {'':<4} {cells}")
    for mutant, status, why in rows:
        cells = " ".join(f"{describe(get(mutant.name, s), mutant.task):<34}" for s in suites)
        flag = "yes" if mutant.public else "no"
        print(f"{mutant.name:<{width}} {mutant.task:<16} {flag:<4} {cells} {status}" + (f"  ({why})" if why else ""))
    counts = {s: sum(1 for _, status, _ in rows if status == s) for s in ("CAUGHT", "MISSED", "n/a")}
    print(f"\n{counts['CAUGHT']} caught, {counts['MISSED']} missed"
          + (f", {counts['n/a']} not judged" if counts["n/a"] else "") + f" of {len(rows)} mutants")
    for failure in failures:
        print(f"FAIL: {failure}")

    if args.json:
        Path(args.json).write_text(json.dumps({
            "suites": list(suites),
            "results": {f"{name}:{suite}": tasks for (name, suite), tasks in results.items()},
            "mutants": [{"name": m.name, "task": m.task, "public": m.public, "verdict": status, "why": why}
                        for m, status, why in rows],
            "failures": failures,
        }, indent=2))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
