"""`python -m instructor COMMAND`: the instructors' tools, which never ship to students or Gradescope."""

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from grader.cli import seconds
from grader.paths import SUITE_CHOICES
from grader.sandbox.policy import SettingError

if TYPE_CHECKING:
    from instructor.deadline import Deadline


def cmd_stubs(args: argparse.Namespace) -> int:
    from instructor.stubs import write_stubs

    print(f"wrote {write_stubs()}")
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    from grader.run import PointsDrift
    from grader.sandbox.isolation import SandboxUnavailable, describe
    from instructor import summary
    from instructor.batch import not_graded, not_graded_students, run_batch
    from instructor.preflight import BadInput, Stalled, check_batch, deadline_of

    only = None
    try:
        check_batch(args)  # every argument, before any grading
        if args.only_failed:
            if not Path(args.output).is_file():
                raise BadInput(f"--only-failed: no gradebook at {args.output} to complete: run batch without it first")
            only = not_graded_students(args.output)
        elif args.only:
            only = set(args.only)
        deadline = deadline_of(args)
        if deadline is not None:
            _warn_unknown_extensions(deadline, args.submissions)
        print(describe(), file=sys.stderr)
        reports = run_batch(args.submissions, args.suite, args.jobs, args.output, timeout=args.timeout,
                            no_sandbox=args.no_sandbox, scheduler=args.scheduler, cluster=args.cluster,
                            roster=args.roster, similarity=args.similarity, only=only, deadline=deadline)
    except (SandboxUnavailable, BadInput, Stalled, PointsDrift) as error:
        print(f"batch: {error}", file=sys.stderr)
        return 2
    print("\n".join(summary.lines(reports, args.output)))
    if args.feedback:
        from instructor.feedback import write_pages

        folder = Path(Path(args.output).with_suffix("").as_posix() + "-feedback")
        write_pages(reports, folder, args.feedback)
        print(f"  feedback pages ({args.feedback} hidden tests): {folder}")
    failed = sorted(student for student, report in reports.items() if not_graded(report))
    if failed:
        print(f"{len(failed)} not graded (a grader error, not the students' doing): {', '.join(failed)}\n"
              f"regrade just those with: python -m instructor batch {args.submissions} --output {args.output} "
              "--only-failed", file=sys.stderr)
        return 1
    return 0


def _warn_unknown_extensions(deadline: "Deadline", submissions: str) -> None:
    from instructor.batch import shown_name
    from instructor.batch import submissions as folders_of
    from instructor.deadline import unknown_students

    unknown = unknown_students(deadline, {shown_name(folder.name) for folder in folders_of(submissions)})
    if unknown:
        print(f"batch: --extensions names {len(unknown)} student(s) with no folder in {submissions} (no one gets "
              f"their extension; check the spelling): {', '.join(unknown)}", file=sys.stderr)


def cmd_canvas_export(args: argparse.Namespace) -> int:
    from instructor import lms
    from instructor.preflight import check_canvas_export

    try:
        check_canvas_export(args)
        unmatched = lms.canvas_export(args.gradebook, args.canvas, args.column, args.output)
    except ValueError as error:  # preflight.BadInput included
        print(f"canvas-export: {error}", file=sys.stderr)
        return 2
    lms.report(unmatched, sys.stderr)
    print(f"wrote {args.output}: import it in Canvas under Grades > Import")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from instructor.release import release

    try:
        dest = release(args.dest, git=not args.no_git, github=args.github, solutions_out=args.solutions_out)
    except ValueError as error:
        print(f"release: {error}", file=sys.stderr)
        return 2
    print(f"student template written to {dest} (public: Colab opens {args.github} from it)")
    if args.solutions_out:
        print(f"the reference copy written to {args.solutions_out}: push it to a PRIVATE repository only")
    return 0


def cmd_gradescope(args: argparse.Namespace) -> int:
    from instructor.gradescope import build

    print(f"wrote {build(args.dest)}")
    return 0


# command: (module with add_arguments(parser) and run(args), imported only when its command runs; help)
TOOLS = {
    "mutants": ("instructor.mutants", "grade the catalogued student bugs and degenerate submissions (make mutants)"),
    "notebook": ("instructor.notebook", "build, check or run assignment/playground.ipynb"),
    "figures": ("instructor.figures", "draw the attention heatmaps of docs/lab.md"),
    "bench": ("instructor.bench.cli", "benchmark the reference against torch (make bench)"),
    "bench-grade": ("instructor.bench_grade", "what grading costs: wall, CPU and memory of whole grader commands"),
    "allowed-names": ("instructor.allowed_names", "regenerate lab/allowed-names.json from the installed torch"),
    "feedback": ("instructor.feedback", "a Markdown and an HTML feedback page per stored report, for students"),
    "class-report": ("instructor.classreport", "how the class did, from stored reports: an HTML page and a CSV"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command; only the named tool's module is imported, to add its arguments."""
    parser = argparse.ArgumentParser(prog="python -m instructor", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("stubs", help="regenerate assignment/attention.py from solutions/").set_defaults(run=cmd_stubs)
    batch = commands.add_parser("batch", help="grade every sub-folder of SUBMISSIONS (one per student)")
    batch.add_argument("submissions", metavar="SUBMISSIONS",
                       help="the folder holding one sub-folder per student (its name is the student's)")
    batch.add_argument("--suite", choices=SUITE_CHOICES, default="all",
                       help="the tests graded: public (what students ran), hidden, or all (default: the grade)")
    batch.add_argument("--jobs", type=int, default=2, metavar="N",
                       help="students graded at once on this machine (default 2; at most one per CPU core: each "
                            "student's tests use one core)")
    batch.add_argument("--output", default="grades.csv", metavar="CSV",
                       help="the gradebook (default grades.csv); the JSON reports go to OUTPUT-reports/, the class "
                            "report to OUTPUT-class.html and .csv, all readable by you only")
    batch.add_argument("--timeout", type=seconds, default=600.0, metavar="SECONDS",
                       help="the limit for grading one student, at least 30 (default 600); past it the tests "
                            "without a result count as timed out (each call into student code has its own limit)")
    batch.add_argument("--no-sandbox", action="store_true",
                       help="grade even where student code cannot be sandboxed (it then runs with your permissions)")
    where = batch.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="grade on the Dask scheduler at ADDRESS (tcp://host:8786)")
    where.add_argument("--cluster", metavar="local:N", help="grade on a new Dask LocalCluster of N worker processes")
    batch.add_argument("--roster", metavar="CSV",
                       help="GitHub Classroom's roster export: adds each student's identifier")
    which = batch.add_mutually_exclusive_group()
    which.add_argument("--only-failed", action="store_true",
                       help="regrade only the students --output marks 'not graded' (a grader error); keep the rest")
    which.add_argument("--only", nargs="+", metavar="NAME",
                       help="regrade only these students (folder names) into --output; every other row stays as it is")
    late = batch.add_argument_group("deadline and late work (the students' folders are git clones)")
    late.add_argument("--deadline", metavar="ISO-TIME",
                      help="grade each clone's last commit before this time, with its UTC offset "
                           "(2026-12-04T23:59:00+01:00); later commits are listed as late")
    late.add_argument("--extensions", metavar="CSV", help="per-student deadlines: a CSV with columns student,deadline")
    late.add_argument("--late-policy", metavar="POLICY",
                      help="none (default: late commits count for nothing), penalty:PCT_PER_DAY[:MAX_DAYS] (the last "
                           "commit up to MAX_DAYS late, total cut PCT%% per day or part of one) or grade-late (the "
                           "newest commit, in full, lateness recorded)")
    batch.add_argument("--feedback", choices=("none", "summary", "full"), metavar="HIDDEN",
                       help="also write a Markdown and HTML feedback page per student (OUTPUT-feedback/), with the "
                            "hidden tests: none, summary (points per task) or full")
    batch.add_argument("--similarity", action="store_true",
                       help="also write a copydetect similarity report and flag similar pairs (scores unchanged)")
    batch.set_defaults(run=cmd_batch)

    canvas = commands.add_parser("canvas-export", help="a CSV for Canvas's gradebook import, from a batch gradebook")
    canvas.add_argument("--gradebook", default="grades.csv", help="batch's CSV, made with --roster")
    canvas.add_argument("--canvas", required=True, metavar="CSV", help="the gradebook you exported from Canvas")
    canvas.add_argument("--column", required=True, help='the assignment column, as Canvas names it: "Lab 03 (4242)"')
    canvas.add_argument("--output", default="canvas-import.csv")
    canvas.set_defaults(run=cmd_canvas_export)

    release = commands.add_parser("release", help="build the student template repository in DEST")
    release.add_argument("dest")
    release.add_argument("--no-git", action="store_true", help="do not make it a one-commit git repository")
    release.add_argument("--github", metavar="OWNER/NAME",
                         help="the template's public GitHub repository, which the Open in Colab links open (required)")
    release.add_argument("--solutions-out", metavar="DIR",
                         help="also write a copy with the reference solution to DIR, for a private repository")
    release.set_defaults(run=cmd_release)

    bundle = commands.add_parser("gradescope", help="build DEST/autograder.zip for Gradescope")
    bundle.add_argument("dest")
    bundle.set_defaults(run=cmd_gradescope)

    for name, (module_name, help_text) in TOOLS.items():
        tool = commands.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = importlib.import_module(module_name)
            module.add_arguments(tool)
            tool.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    try:
        return args.run(args)
    except SettingError as error:  # the instructor's setting, not a failure of the tools
        print(f"python -m instructor: {error}", file=sys.stderr)
        return 2
