"""Feedback pages for students, from stored reports: a Markdown and an HTML page per student with what
`make test` shows them (the public tests' table and what to fix) and the hidden tests' results as far as the
instructor chooses (--hidden none | summary | full). No path of the staff's machine reaches a page: the
report's impl becomes attention.py and every absolute path in a message is cut to its file name. Flags meant
for the staff (similar-to, tampering, grader error) stay out; a lateness flag and the reasons nothing was
graded stay in.

`python -m instructor feedback REPORT.json ...` (or a reports folder) renders any stored report for a TA.
"""

import argparse
import dataclasses
import html
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.formats import summary
from grader.paths import IMPL_NAME
from grader.report import Flag, FlagKind, Report, TestResult, make_report
from instructor.classreport import load_reports, read_report
from instructor.private import private_folder, write_private

HIDDEN_CHOICES = ("none", "summary", "full")
# What a student may read: why nothing was graded, torch's own attention called, lateness (an OTHER flag).
STUDENT_FLAGS = (FlagKind.MISSING, FlagKind.REFUSED, FlagKind.FROM_SCRATCH, FlagKind.OUT_OF_TIME)
LATE_PREFIX = "late: "

# An absolute path: POSIX (/home/ta/x.py, ~/x.py, ~ta/x.py) or Windows (C:\x\y.py, \\server\share\x.py),
# up to a character that ends a path in messages and tracebacks.
_END = r"""[^\s"'`()<>\[\],;:]"""
ABSOLUTE_PATH = re.compile(
    rf"""(?<![\w.~/\\])(?:~[\w.-]*/|/|[A-Za-z]:[\\/]|\\\\)(?:{_END}*[\\/])*({_END}*)""")


def scrub(text: str) -> str:
    """text with every absolute path cut to its last part (its file name): the class's folder, the staff's
    home and the temporary folders a batch grades in say nothing to a student and something about the staff."""
    return ABSOLUTE_PATH.sub(lambda match: match[1] or "(a folder)", text)


@dataclass(frozen=True)
class HiddenTask:
    """One task's hidden tests, as --hidden summary shows them: points and counts, no test names or messages."""

    task: str
    title: str
    score: float
    max_score: float
    passed: int
    tests: int


@dataclass(frozen=True)
class Feedback:
    student: str
    shown: Report  # the public tests, as make test shows them, paths scrubbed
    hidden_tests: Report | None  # --hidden full: the hidden tests, every failure, paths scrubbed
    hidden_tasks: tuple[HiddenTask, ...]  # --hidden summary: their points per task
    notes: tuple[str, ...]  # the flags a student may read
    hidden: str


def _scrubbed(test: TestResult) -> TestResult:
    return dataclasses.replace(test, message=scrub(test.message), output=scrub(test.output), file=scrub(test.file))


def _student_flag(flag: Flag) -> bool:
    return flag.kind in STUDENT_FLAGS or (flag.kind is FlagKind.OTHER and flag.text.startswith(LATE_PREFIX))


def make_feedback(student: str, report: Report, hidden: str = "summary") -> Feedback:
    """What the student's pages show of report, with hidden: none (public tests only), summary (the hidden
    tests' points per task) or full (every test as the public ones)."""
    if hidden not in HIDDEN_CHOICES:
        raise ValueError(f"--hidden {hidden}: choose one of {', '.join(HIDDEN_CHOICES)}")
    public = [_scrubbed(test) for test in report.tests if test.suite != "hidden"]
    secret = [_scrubbed(test) for test in report.tests if test.suite == "hidden"]
    shown = make_report(public, [], "public", IMPL_NAME, report.execution_time)
    hidden_tests = make_report(secret, [], "hidden", IMPL_NAME) if hidden == "full" and secret else None
    hidden_tasks = []
    if hidden == "summary":
        for task_id, task in report.tasks.items():
            mine = [test for test in report.tests if test.task == task_id and test.suite == "hidden"]
            if mine:
                hidden_tasks.append(HiddenTask(task_id, task.title, sum(t.score for t in mine),
                                               sum(t.max_score for t in mine), sum(t.passed for t in mine), len(mine)))
    notes = tuple(scrub(str(flag)) for flag in report.flags if _student_flag(flag))
    return Feedback(scrub(student), shown, hidden_tests, tuple(hidden_tasks), notes, hidden)


def _points(value: float) -> str:
    return f"{value:g}"


def _total_scope(feedback: Feedback) -> str:
    """What the total counts: a late student's total is before the penalty their note gives."""
    late = any(note.startswith(LATE_PREFIX) for note in feedback.notes)
    return "public and hidden tests" + (", before any late penalty: see the notes" if late else "")


def _total_line(report: Report) -> str:
    return f"Total: {_points(report.score)} / {_points(report.max_score)}"


def _fenced(text: str) -> list[str]:
    """text as a Markdown code block whose fence no run of backticks in it closes early."""
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", text)), default=0))
    return [f"{fence}text", text.rstrip("\n"), fence]


def render_markdown(feedback: Feedback, report: Report | None = None) -> str:
    """The page in Markdown: the table `make test` prints, the hidden tests as chosen, the notes.
    report: the whole report, for the total over every suite (omit it to leave the total out)."""
    lines = [f"# Lab 03 feedback: {feedback.student}", ""]
    if report is not None:
        lines += [f"**{_total_line(report)}** ({_total_scope(feedback)})", ""]
    lines += ["## Your tests, as `make test` shows them", "", *_fenced(summary.render(feedback.shown))]
    if feedback.hidden_tests is not None:
        lines += ["", "## Hidden tests (every failure)", "",
                  *_fenced(summary.render(feedback.hidden_tests, verbose=True))]
    elif feedback.hidden_tasks:
        lines += ["", "## Hidden tests", "", "| task | points | tests passed |", "|---|---|---|"]
        lines += [f"| {task.title} | {_points(task.score)} / {_points(task.max_score)} | {task.passed} of "
                  f"{task.tests} |" for task in feedback.hidden_tasks]
    elif feedback.hidden == "none":
        lines += ["", "The hidden tests' results are not shown here."]
    if feedback.notes:
        lines += ["", "## Notes", ""] + [f"- {_md_escape(note)}" for note in feedback.notes]
    return "\n".join(lines) + "\n"


def _md_escape(text: str) -> str:
    """A flag's text as Markdown shows it literally (a student's folder name may hold markup)."""
    return re.sub(r"([\\`*_{}\[\]<>()#+!|])", r"\\\1", text)


def render_html(feedback: Feedback, report: Report | None = None) -> str:
    """The same page as one offline HTML file: no script, nothing fetched, every text escaped."""
    def esc(text: str) -> str:
        return html.escape(text, quote=True)

    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
             f"<title>Lab 03 feedback: {esc(feedback.student)}</title>",
             "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}"
             "pre{background:#f6f6f6;padding:1em;overflow-x:auto}td,th{border:1px solid #ccc;padding:3px 8px}"
             "table{border-collapse:collapse}</style></head><body>",
             f"<h1>Lab 03 feedback: {esc(feedback.student)}</h1>"]
    if report is not None:
        parts.append(f"<p><strong>{esc(_total_line(report))}</strong> ({esc(_total_scope(feedback))})</p>")
    parts.append(f"<h2>Your tests, as <code>make test</code> shows them</h2><pre>{esc(summary.render(feedback.shown))}"
                 "</pre>")
    if feedback.hidden_tests is not None:
        parts.append(f"<h2>Hidden tests (every failure)</h2>"
                     f"<pre>{esc(summary.render(feedback.hidden_tests, verbose=True))}</pre>")
    elif feedback.hidden_tasks:
        rows = "".join(f"<tr><td>{esc(task.title)}</td><td>{_points(task.score)} / {_points(task.max_score)}</td>"
                       f"<td>{task.passed} of {task.tests}</td></tr>" for task in feedback.hidden_tasks)
        parts.append(f"<h2>Hidden tests</h2><table><tr><th>task</th><th>points</th><th>tests passed</th></tr>"
                     f"{rows}</table>")
    elif feedback.hidden == "none":
        parts.append("<p>The hidden tests' results are not shown here.</p>")
    if feedback.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{esc(note)}</li>" for note in feedback.notes) + "</ul>")
    parts.append("</body></html>\n")
    return "".join(parts)


def write_pages(reports: dict[str, Report], folder: str | Path, hidden: str) -> list[Path]:
    """STUDENT.md and STUDENT.html per report in folder (0700; files 0600)."""
    out = private_folder(folder)
    written = []
    for student, report in reports.items():
        feedback = make_feedback(student, report, hidden)
        for suffix, text in ((".md", render_markdown(feedback, report)), (".html", render_html(feedback, report))):
            path = out / f"{student}{suffix}"
            write_private(path, text)
            written.append(path)
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("reports", nargs="+", metavar="REPORT",
                        help="a STUDENT.json report batch stored, or the folder of them (grades-reports/)")
    parser.add_argument("--hidden", choices=HIDDEN_CHOICES, default="summary",
                        help="hidden tests: none (left out), summary (points per task; default) or full (as public)")
    parser.add_argument("--out", default="feedback", metavar="DIR", help="where the pages go (default: feedback/)")


def read_reports(paths: list[str]) -> dict[str, Report]:
    """{student: report} of the files and folders named; ValueError (one line) naming what is not a report."""
    reports: dict[str, Report] = {}
    for name in paths:
        path = Path(name)
        if path.is_dir():
            reports |= load_reports(path)
        elif path.is_file():
            reports[path.stem] = read_report(path)
        else:
            raise ValueError(f"{name}: no such file or folder: give a STUDENT.json report or the reports folder")
    return reports


def run(args: argparse.Namespace) -> int:
    try:
        reports = read_reports(args.reports)
    except ValueError as error:
        print(f"feedback: {error}", file=sys.stderr)
        return 2
    written = write_pages(reports, args.out, args.hidden)
    print(f"wrote {len(written)} pages for {len(reports)} student(s) in {args.out}")
    return 0
