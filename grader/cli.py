"""`python -m grader COMMAND`: a thin layer over the modules that do the work."""

import argparse
import sys
from pathlib import Path

from grader import REPO


def cmd_stubs(args):
    from grader.stubs import write_stubs

    print(f"wrote {write_stubs()}")
    return 0


def cmd_grade(args):
    from grader.formats import RENDERERS
    from grader.grade import grade
    from grader.run import GraderError

    from grader.sandbox import describe

    print(describe(), file=sys.stderr)
    try:
        report = grade(args.impl, args.suite, timeout=args.timeout)
    except GraderError as error:
        print(f"grader error (not your code's fault): {error}", file=sys.stderr)
        return 2
    options = dict(verbose=args.verbose, show_output=args.show_output)
    text = RENDERERS[args.format](report, hidden_visibility=args.hidden_visibility, **options)
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text)
        text = RENDERERS["summary"](report, **options)  # the log still shows the table
    print(text, end="" if text.endswith("\n") else "\n")
    if args.exit_zero:
        return 0
    full = report["score"] == report["max_score"] and report["max_score"] > 0
    if args.expect == "zero":
        if report["score"] != 0:
            print(f"expected 0 points, got {report['score']:g}", file=sys.stderr)
        return 0 if report["score"] == 0 and not report.get("bonus_score") else 1
    return 0 if full else 1


def cmd_batch(args):
    from grader.batch import run_batch
    from grader.sandbox import SandboxUnavailable, describe

    print(describe(), file=sys.stderr)
    try:
        reports = run_batch(args.submissions, args.suite, args.jobs, args.output, timeout=args.timeout,
                            no_sandbox=args.no_sandbox, scheduler=args.scheduler, cluster=args.cluster,
                            roster=args.roster, similarity=args.similarity)
    except SandboxUnavailable as error:
        print(error, file=sys.stderr)
        return 2
    print(f"graded {len(reports)} submissions into {args.output}")
    return 0


def cmd_canvas_export(args):
    from grader import lms

    try:
        unmatched = lms.canvas_export(args.gradebook, args.canvas, args.column, args.output)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    lms.report(unmatched, sys.stderr)
    print(f"wrote {args.output}: import it in Canvas under Grades > Import")
    return 0


def cmd_release(args):
    from grader.release import release

    print(f"student template written to {release(args.dest, git=not args.no_git, github=args.github)}")
    return 0


def cmd_gradescope(args):
    from grader.gradescope import build

    print(f"wrote {build(args.dest)}")
    return 0


def cmd_gradescope_run(args):
    from grader.gradescope import run
    from grader.sandbox import SandboxUnavailable, describe, require

    print(describe())
    try:
        require("gradescope-run", args.no_sandbox)
    except SandboxUnavailable as error:
        print(error, file=sys.stderr)
        return 2
    print(f"wrote {run(args.root, args.hidden_visibility)}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("stubs", help="regenerate assignment/attention.py from solutions/").set_defaults(run=cmd_stubs)

    grade = commands.add_parser("grade", help="grade one attention.py")
    grade.add_argument("--impl", default=str(REPO / "assignment"), help="folder (or file) with attention.py")
    grade.add_argument("--suite", choices=("public", "hidden", "all"), default="public")
    grade.add_argument("--format", choices=("summary", "json", "gradescope", "classroom", "pytest-json"),
                       default="summary")
    grade.add_argument("--output", help="write the report here instead of stdout")
    grade.add_argument("--verbose", action="store_true", help="summary: every failure, not the first per task")
    grade.add_argument("--show-output", action="store_true",
                       help="summary: also print the last lines your code printed (the worker's log)")
    grade.add_argument("--timeout", type=float, default=600.0, help="limit for the whole run, in seconds")
    grade.add_argument("--hidden-visibility", default="after_published",
                       choices=("hidden", "after_due_date", "after_published", "visible"),
                       help="gradescope: visibility of hidden-suite tests")
    grade.add_argument("--exit-zero", action="store_true", help="exit 0 even when points are lost")
    grade.add_argument("--expect", choices=("full", "zero"), default="full",
                       help="exit 0 only for full marks (default) or only for zero points (the stubs)")
    grade.set_defaults(run=cmd_grade)

    batch = commands.add_parser("batch", help="grade every sub-folder of SUBMISSIONS (one per student)")
    batch.add_argument("submissions")
    batch.add_argument("--suite", choices=("public", "hidden", "all"), default="all")
    batch.add_argument("--jobs", type=int, default=2)
    batch.add_argument("--output", default="grades.csv")
    batch.add_argument("--timeout", type=float, default=600.0)
    batch.add_argument("--no-sandbox", action="store_true",
                       help="grade even where student code cannot be sandboxed (it then runs with your permissions)")
    where = batch.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="grade on the Dask scheduler at ADDRESS (tcp://host:8786)")
    where.add_argument("--cluster", metavar="local:N", help="grade on a new Dask LocalCluster of N worker processes")
    batch.add_argument("--roster", metavar="CSV", help="GitHub Classroom's roster export: adds each student's identifier")
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
    release.add_argument("--github", default="COURSE/lab03-template", metavar="OWNER/NAME",
                         help="the template's GitHub repository, for the Open in Colab links")
    release.set_defaults(run=cmd_release)

    bundle = commands.add_parser("gradescope", help="build DEST/autograder.zip for Gradescope")
    bundle.add_argument("dest")
    bundle.set_defaults(run=cmd_gradescope)

    on_gradescope = commands.add_parser("gradescope-run", help="(run_autograder) grade ROOT/submission")
    on_gradescope.add_argument("--root", default="/autograder")
    on_gradescope.add_argument("--no-sandbox", action="store_true",
                       help="grade even where student code cannot be sandboxed (it then runs with your permissions)")
    on_gradescope.add_argument("--hidden-visibility", default="after_published",
                               choices=("hidden", "after_due_date", "after_published", "visible"))
    on_gradescope.set_defaults(run=cmd_gradescope_run)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    return args.run(args)
