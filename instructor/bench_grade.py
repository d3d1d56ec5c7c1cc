"""How much grading costs: wall time, CPU-seconds and peak memory of whole grader commands.

    python -m instructor bench-grade [--runs 3] [--students 6] [--no-write]      (make bench-grade)
    python -m instructor bench-grade --against OTHER_CHECKOUT [--runs 4]        (make bench-grade AGAINST=...)

Each case runs as a child process tree, several times; the table gives medians. CPU-seconds are the
user + system time of the whole tree, read from a cpuacct cgroup the case runs in (root, cgroup v1);
elsewhere from os.wait4, which misses every process its parent never waits for (a killed sandbox's
worker: about half of a grade's CPU). Peak memory is the largest resident set of one waited-for process.
Ratios are to a bare `python -c "import torch"`, the floor any grading pays. The large-class cases
(LocalCluster against --jobs 2) run once per three runs of the others. Writes its section of
docs/benchmarks.md between two markers, leaving the attention benchmarks (instructor.bench) as they are.

--against compares this checkout with another (e.g. `git worktree add /tmp/base COMMIT`), each case run in
both, alternating, so that a load that comes and goes weighs on both alike: the way to say whether a change
kept the cost within --tolerance (exit 1 if not). A table of another day is no baseline: machines drift.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from grader.paths import REPO, SOLUTION_FILE, STUB_FILE

OUT_MD = REPO / "docs" / "benchmarks.md"
BEGIN = "<!-- bench-grade: begin (python -m instructor bench-grade writes this section) -->"
END = "<!-- bench-grade: end -->"
CRASH_AT_IMPORT = "import os\nos._exit(3)\n"
HANG_AT_IMPORT = "while True:\n    pass\n"


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float
    peak_mib: float


@dataclass(frozen=True)
class Case:
    name: str
    command: tuple
    per_student: int = 1  # the command grades this many students
    large: bool = False  # a large class: fewer runs


CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def _cpu_group():
    """A new cpuacct cgroup for one run, or None where none can be made."""
    try:
        return Path(tempfile.mkdtemp(prefix="bench-grade-", dir=CPUACCT))
    except OSError:
        return None


def _remove_group(group):
    for _ in range(100):
        try:
            group.rmdir()
            return
        except OSError:  # a killed process of the run still leaving it
            time.sleep(0.05)


def measure(command, env=None, cwd=REPO):
    """Run command (in cwd) to its end; its wall time, the CPU-seconds of its whole tree and its peak RSS."""
    group = _cpu_group()

    def join_group():
        (group / "cgroup.procs").write_text(str(os.getpid()))

    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd, env=env,
                               preexec_fn=join_group if group else None)
    _, _, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    cpu = usage.ru_utime + usage.ru_stime
    if group is not None:
        cpu = int((group / "cpuacct.usage").read_text()) / 1e9
        _remove_group(group)
    return Sample(wall, cpu, usage.ru_maxrss / 1024)


def cpu_source():
    group = _cpu_group()
    if group is None:
        return "os.wait4 (no cpuacct cgroup here: a killed worker's CPU is missed)"
    _remove_group(group)
    return "a cpuacct cgroup per run"


def median_sample(command, runs):
    return median_of([measure(command) for _ in range(runs)])


def median_of(samples):
    return Sample(*(statistics.median(getattr(s, field) for s in samples) for field in ("wall", "cpu", "peak_mib")))


def paired_samples(first, second, pairs, first_cwd=REPO):
    """Each command `pairs` times, alternating, so that a load that comes and goes weighs on both alike (first
    run from first_cwd: another checkout's, for --against)."""
    samples = [(measure(first, cwd=first_cwd), measure(second)) for _ in range(pairs)]
    return [a for a, _ in samples], [b for _, b in samples]


def submission(root, name, source):
    folder = Path(root) / name
    folder.mkdir(parents=True)
    (folder / "attention.py").write_text(source)
    return folder


def class_folder(root, students, source=SOLUTION_FILE):
    """A class of `students` copies of source (the reference), one folder each, as batch expects."""
    text = Path(source).read_text()
    folder = Path(root) / "class"
    for number in range(students):
        submission(folder, f"student{number:02d}", text)
    return folder


def cases(root, students, large_class, checkout=REPO):
    """The cases, as commands run from checkout (`python -m` imports that checkout's grader)."""
    python = sys.executable
    grade = (python, "-m", "grader", "grade", "--exit-zero")
    crash = submission(root, "crash", CRASH_AT_IMPORT)
    hang = submission(root, "hang", HANG_AT_IMPORT)
    klass = class_folder(root, students)
    batch = (python, "-m", "instructor", "batch", str(klass), "--suite", "all",
             "--output", str(Path(root) / "grades.csv"))
    stubs = (python, "-m", "instructor", "batch", str(class_folder(Path(root) / "stubs", students, STUB_FILE)),
             "--suite", "all", "--output", str(Path(root) / "stubs.csv"))
    large = (python, "-m", "instructor", "batch", str(class_folder(Path(root) / "large", large_class)),
             "--suite", "all", "--output", str(Path(root) / "large.csv"))
    return [
        Case("import torch", (python, "-c", "import torch")),
        Case("make test (public, reference)", (*grade, "--suite", "public", "--impl", str(checkout / "solutions"))),
        Case("full grade (all suites, reference)", (*grade, "--suite", "all", "--impl", str(checkout / "solutions"))),
        Case("full grade, stubs", (*grade, "--suite", "all", "--impl", str(checkout / "assignment"))),
        Case("full grade, crash at import", (*grade, "--suite", "all", "--impl", str(crash))),
        Case("full grade, hang at import", (*grade, "--suite", "all", "--impl", str(hang))),
        Case(f"batch --jobs 1, {students} students", (*batch, "--jobs", "1"), per_student=students),
        Case(f"batch --jobs 2, {students} students", (*batch, "--jobs", "2"), per_student=students),
        Case(f"batch --jobs 2, {students} students, stubs", (*stubs, "--jobs", "2"), per_student=students),
        Case(f"batch --jobs 2, {large_class} students", (*large, "--jobs", "2"), per_student=large_class, large=True),
        Case(f"batch --cluster local:2, {large_class} students", (*large, "--cluster", "local:2"),
             per_student=large_class, large=True),
    ]


def table(results):
    floor = results[0][1]
    lines = [
        "| case | wall s | CPU s | wall / import torch | CPU s per student | peak MiB (one process) |",
        "|---|---|---|---|---|---|",
    ]
    for case, sample in results:
        lines.append(
            f"| {case.name} | {sample.wall:.2f} | {sample.cpu:.2f} | {sample.wall / floor.wall:.1f}x | "
            f"{sample.cpu / case.per_student:.2f} | {sample.peak_mib:.0f} |"
        )
    return lines


def cluster_ratios(jobs, cluster):
    """Per pair of runs, the LocalCluster's wall time over --jobs 2's on the large class."""
    return [dask.wall / local.wall for local, dask in zip(jobs, cluster, strict=True)]


def section(results, runs, pairs, ratios, load_before, load_after, cpu_from):
    cluster = [] if not ratios else [
        "",
        f"LocalCluster of 2 workers / `--jobs 2` on the large class, per pair of runs: "
        f"{', '.join(f'{ratio:.2f}x' for ratio in ratios)}; median {statistics.median(ratios):.2f}x wall time.",
    ]
    large = f"; the large class {pairs} times each way, alternating" if ratios else ""
    return [
        BEGIN,
        "## What grading costs",
        "",
        f"Generated by `python -m instructor bench-grade` (`make bench-grade`): medians of {runs} runs of each "
        f"whole command{large}; {os.cpu_count()} cores, load average {load_before:.1f} before the run and "
        f"{load_after:.1f} after it. CPU seconds count the whole process tree (grader, pytest child, worker), "
        f"from {cpu_from}.",
        "",
        *table(results),
        *cluster,
        "",
        *WHERE_THE_TIME_GOES,
        END,
    ]


WHERE_THE_TIME_GOES = [
    "Where a grade's time goes: a graded pytest child imports torch (its oracle) and pytest; the worker needs",
    "torch in its sandbox; the tests then run. A single grade (`make test`, Gradescope) imports torch once: one",
    "new Python imports it, forks the worker, which then enters its sandbox, and becomes the pytest child",
    "(grader/sandbox/twin.py; at the user-namespace level and off Linux, two Pythons import it side by side). The",
    "worker's first meta-device operation (sympy's import) is paid before any call is timed, and the grader stops",
    "pytest as soon as it has closed its report channel (no interpreter shutdown). `batch` (and each Dask worker",
    "host) pays the imports once: each",
    "student's worker is forked from a sandboxed zygote (instructor/warm/zygote.py) and each pytest child from",
    "a prefork server (instructor/warm/prefork.py), both warm, their imports frozen out of the garbage collector,",
    "both forked from one Python that imported torch (instructor/warm/pair.py), and a worker restarted after a",
    "crash is forked by the zygote too.",
    "On Dask,",
    "a host's worker processes share one zygote and one prefork server (instructor/host.py), and the workers run",
    "without Dask's profiler (instructor.cluster.DASK_SETTINGS).",
]


def marked_section(path):
    """The marked section of path, or "" (instructor.bench keeps it when it rewrites the page)."""
    text = path.read_text() if path.exists() else ""
    if BEGIN not in text or END not in text:
        return ""
    return BEGIN + text.split(BEGIN, 1)[1].split(END, 1)[0] + END + "\n"


def write_section(path, lines):
    """Replace the marked section of path (or append it), keeping everything else."""
    text = path.read_text() if path.exists() else ""
    block = "\n".join(lines) + "\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text)


def compared(pairs_of_samples):
    """Per case: (case, the other checkout's median, this one's median) from alternating samples."""
    return [(case, median_of(theirs), median_of(ours)) for case, theirs, ours in pairs_of_samples]


def comparison_table(rows, tolerance):
    """The A/B table, and whether every case's wall and CPU stayed within tolerance of the other checkout's."""
    lines = ["| case | wall s, other -> this | CPU s, other -> this |", "|---|---|---|"]
    within = True
    for case, theirs, ours in rows:
        wall, cpu = ours.wall / theirs.wall - 1, ours.cpu / theirs.cpu - 1
        within = within and wall <= tolerance and cpu <= tolerance
        lines.append(f"| {case.name} | {theirs.wall:.2f} -> {ours.wall:.2f} ({wall:+.0%}) | "
                     f"{theirs.cpu:.2f} -> {ours.cpu:.2f} ({cpu:+.0%}) |")
    return lines, within


def run_against(args):
    other = Path(args.against).resolve()
    if not (other / "grader" / "grade.py").is_file():
        print(f"bench-grade: --against {args.against}: not a checkout of this project (no grader/grade.py there); "
              "make one with `git worktree add PATH COMMIT`", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="bench-grade-"))
    try:
        theirs = {case.name: case for case in cases(root / "other", args.students, 0, other) if not case.large}
        ours = [case for case in cases(root / "this", args.students, 0) if not case.large]
        samples = []
        for case in ours:
            samples.append((case, *paired_samples(theirs[case.name].command, case.command, args.runs, other)))
            print(f"  {case.name}: {compared([samples[-1]])[0][1:]}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines, within = comparison_table(compared(samples), args.tolerance)
    print(f"This checkout against {other}: medians of {args.runs} alternating runs each, CPU from {cpu_source()}.")
    print("\n".join(lines))
    print(f"every case within {args.tolerance:.0%}: {'yes' if within else 'no'}")
    return 0 if within else 1


def add_arguments(parser):
    parser.add_argument("--runs", type=int, default=3, help="runs of each case (default 3)")
    parser.add_argument("--students", type=int, default=6, help="class size for the batch cases (default 6)")
    parser.add_argument("--large-class", type=int, default=40,
                        help="class size for the LocalCluster against --jobs 2 cases (default 40; 0 skips them)")
    parser.add_argument("--pairs", type=int, default=3,
                        help="runs of the large class each way, alternating (default 3)")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--against", metavar="CHECKOUT",
                        help="compare with another checkout, alternating (prints a table; writes nothing)")
    parser.add_argument("--tolerance", type=float, default=0.10,
                        help="--against: the largest increase of wall or CPU time accepted (default 0.10)")


def run(args):
    if args.against:
        return run_against(args)
    root = Path(tempfile.mkdtemp(prefix="bench-grade-"))
    load_before = os.getloadavg()[0]
    try:
        results = []
        all_cases = cases(root, args.students, args.large_class)
        for case in (case for case in all_cases if not case.large):
            results.append((case, median_sample(case.command, args.runs)))
            print(f"  {case.name}: {results[-1][1]}", file=sys.stderr, flush=True)
        ratios = []
        if args.large_class:
            jobs, cluster = (case for case in all_cases if case.large)
            on_jobs, on_cluster = paired_samples(jobs.command, cluster.command, args.pairs)
            results += [(jobs, median_of(on_jobs)), (cluster, median_of(on_cluster))]
            ratios = cluster_ratios(on_jobs, on_cluster)
            print(f"  {jobs.name}: {on_jobs}\n  {cluster.name}: {on_cluster}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = section(results, args.runs, args.pairs, ratios, load_before, os.getloadavg()[0], cpu_source())
    print("\n".join(lines[1:-1]))
    if not args.no_write:
        write_section(OUT_MD, lines)
    return 0

