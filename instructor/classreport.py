"""How the class did, from the students' reports: the distribution of totals, each task's mean and pass rate,
the tests most failed and the mistakes the suites named most often ("Likely cause:" lines of the tests'
messages). One ClassSummary (pure data) rendered twice: an HTML page with its plots embedded (one offline
file) and a CSV beside it, both 0600 like everything else written about students.

`batch` writes it after every run; `python -m instructor class-report REPORTS_DIR` makes it from the reports
a batch stored.
"""

import argparse
import base64
import html
import io
import json
import re
import statistics
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.lab import LAB
from grader.paths import IMPL_NAME
from grader.report import FlagKind, Report
from grader.tasks import TASKS
from instructor import csvsafe
from instructor.private import open_private, write_private

CAUSE_PREFIX = "Likely cause:"
TOP = 15  # rows of each ranked table: the page stays small whatever the class size
CAUSE_CHARS = 240  # a cause is a sentence or two; longer text is cut in the page and the CSV
BINS = 10  # histogram bars across 0..max
NOT_COUNTED = (FlagKind.MISSING, FlagKind.GRADER_ERROR)


@dataclass(frozen=True)
class TaskStat:
    id: str
    title: str
    max_score: float
    mean: float
    pass_rate: float  # the share of graded students with the task's every point
    bonus: bool


@dataclass(frozen=True)
class Ranked:
    """A test or a cause, and how many graded students it hit (each student counted once)."""

    name: str
    task: str
    students: int


@dataclass(frozen=True)
class ClassSummary:
    students: int
    missing: int
    not_graded: int
    totals: tuple[float, ...]  # of the graded students, ascending
    max_score: float
    tasks: tuple[TaskStat, ...]
    failed_tests: tuple[Ranked, ...]
    causes: tuple[Ranked, ...]

    @property
    def graded(self) -> int:
        return len(self.totals)


def _has(report: Report, kind: FlagKind) -> bool:
    return any(flag.kind is kind for flag in report.flags)


def cause_of(line: str) -> str:
    """A Likely cause line as a key to count by: the prefix gone, numbers as N (a cause that quotes a student's
    shapes, "dimension 3 of x (12)", is the same mistake as another student's "dimension 1 of x (8)")."""
    text = line.strip()[len(CAUSE_PREFIX):].strip()
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return text if len(text) <= CAUSE_CHARS else text[:CAUSE_CHARS - 3] + "..."


def summarize(reports: Mapping[str, Report], top: int = TOP) -> ClassSummary:
    """The class's figures; missing submissions and grader errors are counted apart, never as zeros."""
    graded = [report for report in reports.values() if not any(_has(report, kind) for kind in NOT_COUNTED)]
    known = {task.id: task for task in TASKS}
    task_ids = [task.id for task in TASKS if any(task.id in report.tasks for report in graded)]
    task_ids += sorted({t for report in graded for t in report.tasks} - set(task_ids))
    tasks = []
    for task_id in task_ids:
        scores = [report.tasks[task_id] for report in graded if task_id in report.tasks]
        maximum = max(score.max_score for score in scores)
        first = scores[0]
        tasks.append(TaskStat(task_id, first.title, maximum, statistics.fmean(s.score for s in scores),
                              sum(s.score == s.max_score for s in scores) / len(scores),
                              known[task_id].bonus if task_id in known else first.bonus))
    failed: Counter[tuple[str, str]] = Counter()
    causes: Counter[str] = Counter()
    cause_task: dict[str, str] = {}
    for report in graded:
        failed.update({(test.id, test.task) for test in report.tests if not test.passed})
        mine: dict[str, str] = {}
        for test in report.tests:
            for line in test.message.splitlines():
                if line.strip().startswith(CAUSE_PREFIX):
                    mine.setdefault(cause_of(line), test.task)
        causes.update(mine.keys())
        for cause, task in mine.items():
            cause_task.setdefault(cause, task)
    return ClassSummary(
        students=len(reports),
        missing=sum(_has(report, FlagKind.MISSING) for report in reports.values()),
        not_graded=sum(_has(report, FlagKind.GRADER_ERROR) for report in reports.values()),
        totals=tuple(sorted(report.score for report in graded)),
        max_score=max((report.max_score for report in graded), default=0.0),
        tasks=tuple(tasks),
        failed_tests=tuple(Ranked(test, task, count) for (test, task), count in _ranked(failed, top)),
        causes=tuple(Ranked(cause, cause_task[cause], count) for cause, count in _ranked(causes, top)),
    )


def _ranked(counter: Counter, top: int) -> list:
    """Most students first, then by name: the same class gives the same page."""
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))[:top]


# -- the CSV -----------------------------------------------------------------------------------------

CSV_HEADER = ("section", "name", "task", "value", "out_of")


def csv_rows(summary: ClassSummary) -> list[tuple]:
    """One long table: section names what a row is (totals, task_mean, task_pass_rate, failed_test, cause)."""
    rows: list[tuple] = [
        ("students", "all", "", summary.students, ""),
        ("students", "graded", "", summary.graded, summary.students),
        ("students", "missing", "", summary.missing, summary.students),
        ("students", "not_graded", "", summary.not_graded, summary.students),
    ]
    if summary.totals:
        rows += [("totals", "mean", "", round(statistics.fmean(summary.totals), 2), summary.max_score),
                 ("totals", "median", "", statistics.median(summary.totals), summary.max_score)]
        rows += [("totals", label, "", count, summary.graded) for label, count in histogram(summary)]
    for task in summary.tasks:
        rows.append(("task_mean", task.id, task.id, round(task.mean, 2), task.max_score))
        rows.append(("task_pass_rate", task.id, task.id, round(task.pass_rate, 3), 1))
    rows += [("failed_test", test.name, test.task, test.students, summary.graded) for test in summary.failed_tests]
    rows += [("cause", cause.name, cause.task, cause.students, summary.graded) for cause in summary.causes]
    return rows


def histogram(summary: ClassSummary, bins: int = BINS) -> list[tuple[str, int]]:
    """(range, students) over 0..max in equal bins, the last one closed: full marks count in it."""
    top = summary.max_score or 1.0
    width = top / bins
    counts = [0] * bins
    for total in summary.totals:
        counts[min(int(total / width), bins - 1) if total > 0 else 0] += 1
    return [(f"{i * width:g}-{(i + 1) * width:g}", count) for i, count in enumerate(counts)]


# -- the page ----------------------------------------------------------------------------------------

def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def plots(summary: ClassSummary) -> list[tuple[str, str]]:
    """(alt text, base64 PNG): the totals' histogram and each task's pass rate."""
    import matplotlib

    matplotlib.use("Agg")  # no display on a grading server
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    made = []
    figure, axes = plt.subplots(figsize=(7, 3))
    bins = histogram(summary)
    axes.bar(range(len(bins)), [count for _, count in bins], color="#4878a8")
    axes.set_xticks(range(len(bins)), [label for label, _ in bins], rotation=30, fontsize=8)
    axes.set_xlabel(f"total (out of {summary.max_score:g})")
    axes.set_ylabel("students")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))  # a count of students has no halves
    axes.set_title(f"Totals of the {summary.graded} graded students")
    made.append(("Histogram of the graded students' totals", _png(figure)))
    plt.close(figure)

    figure, axes = plt.subplots(figsize=(7, 0.35 * len(summary.tasks) + 1))
    names = [task.id + (" (bonus)" if task.bonus else "") for task in summary.tasks]
    axes.barh(range(len(names)), [100 * task.pass_rate for task in summary.tasks], color="#59a14f")
    axes.set_yticks(range(len(names)), names, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, 100)
    axes.set_xlabel("% of graded students with every point of the task")
    axes.set_title("Pass rate per task")
    made.append(("Bar chart of each task's pass rate", _png(figure)))
    plt.close(figure)
    return made


STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
         "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
         "td.n{text-align:right}img{max-width:100%}")


def _table(header: tuple[str, ...], rows: list[tuple], empty: str = "None.") -> str:
    """rows as a table; a sentence where there are none (an empty table reads as a page that failed)."""
    if not rows:
        return f"<p>{html.escape(empty)}</p>"

    def cell(value: object) -> str:
        kind = ' class="n"' if isinstance(value, (int, float)) else ""
        return f"<td{kind}>{html.escape(str(value))}</td>"

    head = "".join(f"<th>{html.escape(name)}</th>" for name in header)
    body = "".join("<tr>" + "".join(cell(value) for value in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(summary: ClassSummary, title: str = f"{LAB.name} class report") -> str:
    """One self-contained page: no script, nothing fetched, every text escaped (a cause quotes a student's code)."""
    def share(count: int) -> str:
        return f"{100 * count / summary.graded:.0f}%" if summary.graded else "-"

    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p>{summary.students} students: {summary.graded} graded, {summary.missing} missing (no {IMPL_NAME}), "
             f"{summary.not_graded} not graded (grader error).</p>"]
    if summary.totals:
        parts.append(f"<p>Total of the graded: mean {statistics.fmean(summary.totals):.1f}, median "
                     f"{statistics.median(summary.totals):g}, out of {summary.max_score:g}.</p>")
        parts += [f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{data}'>" for alt, data in plots(summary)]
    parts.append("<h2>Tasks</h2>" + _table(
        ("task", "title", "mean", "out of", "pass rate"),
        [(t.id, t.title, f"{t.mean:.2f}", f"{t.max_score:g}", f"{100 * t.pass_rate:.0f}%") for t in summary.tasks]))
    parts.append(f"<h2>Tests most failed (top {TOP})</h2>" + _table(
        ("test", "task", "students", "share"),
        [(t.name, t.task, t.students, share(t.students)) for t in summary.failed_tests], "No test failed."))
    parts.append(f"<h2>Most frequent likely causes (top {TOP})</h2><p>The \"Likely cause\" lines of the failures, "
                 "numbers written as N; each student counted once per cause.</p>" + _table(
                     ("cause", "task", "students", "share"),
                     [(c.name, c.task, c.students, share(c.students)) for c in summary.causes],
                     "No failure of the graded named a likely cause."))
    parts.append("</body></html>\n")
    return "".join(parts)


def write(summary: ClassSummary, html_path: str | Path) -> tuple[Path, Path]:
    """The page at html_path and the CSV beside it (same name, .csv), both 0600."""
    html_path = Path(html_path)
    csv_path = html_path.with_suffix(".csv")
    write_private(html_path, render_html(summary))
    with open_private(csv_path, newline="", encoding="utf-8") as handle:
        writer = csvsafe.writer(handle)  # a test id or a cause is text from the suites, a student can steer
        writer.writerow(CSV_HEADER)
        writer.writerows(csv_rows(summary))
    return html_path, csv_path


def class_report_path(output: str | Path) -> Path:
    """Where batch puts the page: grades.csv -> grades-class.html."""
    return Path(Path(output).with_suffix("").as_posix() + "-class.html")


# -- reading stored reports --------------------------------------------------------------------------

def read_report(file: Path) -> Report:
    """A report batch (or grade --format json) stored; ValueError (one line) naming a file that is not one."""
    try:
        return Report.from_json(json.loads(file.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{file}: not a grader report ({type(error).__name__}: {error}): "
                         "remove it or regrade that student") from None


def load_reports(folder: str | Path) -> dict[str, Report]:
    """{student: report} of the STUDENT.json files batch stored; ValueError (one line) on what is not one."""
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"{folder}: no such folder: give the reports folder batch wrote (grades-reports/)")
    files = sorted(root.glob("*.json"))
    if not files:
        raise ValueError(f"{folder}: no .json report in it: give the reports folder batch wrote (grades-reports/)")
    return {file.stem: read_report(file) for file in files}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("reports", metavar="REPORTS_DIR", help="the folder of STUDENT.json reports batch wrote")
    parser.add_argument("--output", metavar="HTML",
                        help="the page to write (default: REPORTS_DIR without -reports, plus -class.html); "
                             "the CSV goes beside it")


def run(args: argparse.Namespace) -> int:
    default = re.sub(r"-reports$", "", str(Path(args.reports))) + "-class.html"  # grades-reports -> grades-class.html
    output = Path(args.output or default)
    try:
        if output.suffix.lower() != ".html":
            raise ValueError(f"--output {output}: name an .html file (the CSV goes beside it)")
        if not output.resolve().parent.is_dir():
            raise ValueError(f"--output {output}: its folder does not exist: make it first")
        reports = load_reports(args.reports)
    except ValueError as error:
        print(f"class-report: {error}", file=sys.stderr)
        return 2
    page, table = write(summarize(reports), output)
    print(f"wrote {page} and {table}")
    return 0
