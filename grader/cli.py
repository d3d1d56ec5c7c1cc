"""`python -m grader COMMAND`: grade one submission, here or on Gradescope (instructors: `python -m instructor`)."""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from grader.paths import ASSIGNMENT, IMPL_NAME, SUITE_CHOICES
from grader.sandbox.policy import SettingError, number


def cmd_grade(args: argparse.Namespace) -> int:
    from grader.formats import RENDERERS
    from grader.formats.workflow import inert
    from grader.grade import grade
    from grader.run import GraderError
    from grader.sandbox.isolation import describe

    if args.verbose:  # how the grader isolates the code: for instructors, not part of a student's table
        print(describe(), file=sys.stderr)
    impl = Path(args.impl)
    if impl.is_symlink():  # the folder or file the user named, wherever it is; links inside it stay refused
        impl = impl.resolve()
    try:
        report = grade(impl, args.suite, timeout=args.timeout)
    except GraderError as error:
        print(inert(f"grader error (not your code's fault): {error}"), file=sys.stderr)
        if args.format == "classroom" and args.output:
            _classroom_fallback(args, str(error).splitlines()[0] if str(error) else "see the Grade step log")
        return 2
    options = dict(verbose=args.verbose, show_output=args.show_output)
    text = RENDERERS[args.format](report, hidden_visibility=args.hidden_visibility, **options)
    for name, path in args.also:  # more formats of the same run, each into its file
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(RENDERERS[name](report, hidden_visibility=args.hidden_visibility, **options))
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text)
        text = RENDERERS["summary"](report, **options)  # the log still shows the table
    elif args.format == "github-annotations":  # our own workflow commands, meant to be obeyed
        print(text, end="")
        text = ""
    # On GitHub the log is read for workflow commands: none of the student's text may become one.
    text = inert(text)
    print(text, end="" if not text or text.endswith("\n") else "\n")
    if args.exit_zero:
        return 0
    if args.expect == "zero":
        if report.score != 0:
            print(f"expected 0 points, got {report.score:g}", file=sys.stderr)
        return 0 if report.score == 0 and not report.bonus_score else 1
    return 0 if report.full_marks else 1


def _classroom_fallback(args: argparse.Namespace, why: str) -> None:
    """Classroom's result for a run the grader could not finish, out of the maximum a normal run records (the
    suite's core points, from a collect-only run); nothing is written when even that fails (the workflow's own
    fallback then applies)."""
    from grader.formats import classroom
    from grader.run import collect_manifest, suite_paths
    from grader.tasks import BY_ID

    names, tests_dir = suite_paths(args.suite)
    try:
        manifest = collect_manifest(tests_dir, names, args.impl)
    except Exception:  # the grader itself is broken here: leave it to the workflow
        return
    if manifest:
        core = sum(meta.points for meta in manifest if meta.task in BY_ID and not BY_ID[meta.task].bonus)
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(classroom.fallback(core, why))


def cmd_gradescope_run(args: argparse.Namespace) -> int:
    """Exit 0 with a graded results.json, or 2 with one that says the autograder failed: whatever fails here
    (the sandbox, a setting, the grader's own code), Gradescope gets a results.json to show."""
    from grader.gradescope import run, write_failure

    expected: tuple[type[Exception], ...] = (SettingError,)
    try:
        from grader.paths import SOLUTIONS, TESTS
        from grader.run import GraderError
        from grader.sandbox.exposure import refuse_readable
        from grader.sandbox.isolation import SandboxUnavailable, describe, level, require

        expected = (SettingError, SandboxUnavailable, GraderError)
        print(describe())
        require("gradescope-run", args.no_sandbox)
        if level() == "uid":  # no view: the tests must be closed to the worker's uid (setup.sh does it)
            refuse_readable("gradescope-run", TESTS, [SOLUTIONS])
        print(f"wrote {run(args.root, args.hidden_visibility)}")
        return 0
    except Exception as error:
        write_failure(args.root, error)  # what run() wrote for it already, or the failure before run()
        if isinstance(error, expected):  # the machine or a setting: one line, no traceback
            print(f"python -m grader gradescope-run: {error}", file=sys.stderr)
            return 2
        raise  # the tools' own bug: entry.run prints its traceback and exits 2


# The shortest --timeout taken: a whole grade takes seconds, and a limit near that would time correct code out on
# a loaded machine and blame its tests (calls are limited by their own time, not the machine's: grader.sandbox.clock).
MIN_RUN_SECONDS = 30.0


def seconds(text: str) -> float:
    """--timeout: seconds, at least MIN_RUN_SECONDS, refused in one line (argparse's) otherwise."""
    value = number(text)
    if not (MIN_RUN_SECONDS <= value < float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r}: give the limit for the whole run in seconds, at least "
                                         f"{MIN_RUN_SECONDS:g} (default 600)")
    return value


FORMATS = ("summary", "json", "gradescope", "classroom", "pytest-json", "github", "github-annotations")


def format_and_path(text: str) -> tuple[str, str]:
    """--also FORMAT=PATH, refused in one line (argparse's) when either half is wrong."""
    name, _, path = text.partition("=")
    if name not in FORMATS or not path:
        raise argparse.ArgumentTypeError(f"{text!r}: write FORMAT=PATH with FORMAT one of {', '.join(FORMATS)}")
    return name, path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", help=f"grade one {IMPL_NAME}")
    grade.add_argument("--impl", default=str(ASSIGNMENT), help=f"folder (or file) with {IMPL_NAME}")
    grade.add_argument("--suite", choices=SUITE_CHOICES, default="public")
    grade.add_argument("--format", choices=FORMATS, default="summary")
    grade.add_argument("--output", help="write the report here instead of stdout")
    grade.add_argument("--also", type=format_and_path, action="append", default=[], metavar="FORMAT=PATH",
                       help="also write the same run in FORMAT to PATH (repeatable), e.g. github=$GITHUB_STEP_SUMMARY")
    grade.add_argument("--verbose", action="store_true", help="summary: every failure, not the first per task")
    grade.add_argument("--show-output", action="store_true",
                       help="summary: also print the last lines your code printed (the worker's log)")
    grade.add_argument("--timeout", type=seconds, default=600.0, help="limit for the whole run, in seconds")
    grade.add_argument("--hidden-visibility", default="after_published",
                       choices=("hidden", "after_due_date", "after_published", "visible"),
                       help="gradescope: visibility of hidden-suite tests")
    grade.add_argument("--exit-zero", action="store_true", help="exit 0 even when points are lost")
    grade.add_argument("--expect", choices=("full", "zero"), default="full",
                       help="exit 0 only for full marks (default) or only for zero points (the stubs)")
    grade.set_defaults(run=cmd_grade)

    on_gradescope = commands.add_parser("gradescope-run", help="(run_autograder) grade ROOT/submission")
    on_gradescope.add_argument("--root", default="/autograder")
    on_gradescope.add_argument("--no-sandbox", action="store_true",
                       help="grade even where student code cannot be sandboxed (it then runs with your permissions)")
    on_gradescope.add_argument("--hidden-visibility", default="after_published",
                               choices=("hidden", "after_due_date", "after_published", "visible"))
    on_gradescope.set_defaults(run=cmd_gradescope_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except SettingError as error:  # the instructor's setting, not a failure of the tools
        print(f"python -m grader: {error}", file=sys.stderr)
        return 2
