"""Grade a whole class: one sub-folder per student, in parallel (local processes, or a Dask cluster:
instructor.cluster), into a CSV gradebook and one JSON report per student. A broken submission costs its
student only. Options join GitHub Classroom's roster (instructor.lms) and flag similar code (instructor.similarity)."""

import csv
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Collection, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from grader.capabilities import SyntaxScan, scan
from grader.paths import SOLUTIONS, TESTS, find_impl
from grader.report import Flag, Report
from grader.run import fingerprint, suite_paths
from grader.sandbox.exposure import refuse_readable
from grader.sandbox.isolation import VIEW_LEVELS, level, require
from grader.sandbox.policy import Limits, limits_from
from grader.tasks import TASKS
from instructor import csvsafe
from instructor.deadline import LATE_COLUMNS, NO_HISTORY, Checkout, Deadline, checkout_all
from instructor.gradebook import (  # noqa: F401  (batch's callers import them from here too)
    GRADER_ERROR_ATTEMPTS,
    NOT_GRADED,
    NOT_STUDENTS,
    error_report,
    grade_folder,
    not_graded,
    shown_name,
    submissions,
)
from instructor.private import open_private, private_folder, write_private
from instructor.warm import warm_launcher

# Only the levels with a mount namespace give each worker the allow-list view: at the uid level a submission
# could read a classmate's folder or the checkout wherever their permissions let other users in. Root gets
# "namespaces"; an ordinary user (a Slurm job) "user-namespace", where only rlimits cap memory (no cgroups).
BATCH_LEVELS = VIEW_LEVELS


def run_batch(root: str | Path, suite: str = "all", jobs: int = 2, output: str | Path = "grades.csv",
              reports_dir: str | Path | None = None, timeout: float = 600.0, tests_dir: str | Path | None = None,
              progress: bool = True, no_sandbox: bool = False, scheduler: str | None = None,
              cluster: str | None = None, roster: str | Path | None = None, similarity: bool = False,
              only: Collection[str] | None = None, syntax_scan: SyntaxScan = scan,
              limits: Limits | None = None, deadline: Deadline | None = None) -> dict[str, Report]:
    """no_sandbox: grade even where grader.sandbox.isolation cannot isolate the students from each other.
    scheduler / cluster: grade on Dask (an address, or "local:N") instead of `jobs` local processes.
    roster: GitHub Classroom's roster CSV, joined into the gradebook. similarity: flag similar code.
    only: grade just these students and keep every other row of the gradebook at output as it is
    (--only-failed: the students a grader error left not graded). syntax_scan, limits: as grader.grade.grade's
    (local grading only; limits default to the GRADER_* overrides of the environment). deadline: grade each
    clone's commit that instructor.deadline chooses (its files copied to a private temporary folder), with its
    lateness in the gradebook and a flag."""
    limits = limits or limits_from(os.environ)  # a setting that cannot grade correct code stops here, not per row
    if not (scheduler or cluster):  # on Dask, each task requires the sandbox on the host that grades it
        require("batch", no_sandbox, levels=BATCH_LEVELS)
        if level() == "uid":  # --no-sandbox accepts a weaker isolation, never tests every student can read
            refuse_readable("batch", Path(tests_dir or TESTS), [SOLUTIONS])
    folders = submissions(root)
    if only is not None:
        folders = [folder for folder in folders if shown_name(folder.name) in only]
    reports_dir = Path(reports_dir or Path(output).with_suffix("").as_posix() + "-reports")
    private_folder(reports_dir)
    with tempfile.TemporaryDirectory(prefix="batch-commits-") as workdir:  # 0700: the staff's alone
        hide = (str(Path(root).resolve()), str(Path(workdir).resolve()))  # no worker reads a classmate's folder
        checkouts: dict[str, Checkout] | None = None
        clones = {folder.name: folder for folder in folders}
        if deadline is not None:
            shown = {folder.name: shown_name(folder.name) for folder in folders}
            folders, checkouts = checkout_all(folders, deadline, Path(workdir), shown)
        reports = _grade(folders, suite, jobs, timeout, tests_dir, hide, scheduler, cluster, no_sandbox,
                         syntax_scan, limits, progress)
        if checkouts is not None:
            _flag_lateness(reports, checkouts, clones)
        keep = only is not None
        _write_results(reports, reports_dir, output, roster, keep, checkouts)
        if similarity and _flag_similar(folders, reports, output):  # last: the grades above stand whatever it does
            _write_results(reports, reports_dir, output, roster, keep, checkouts, quiet=True)
    _write_class_report(reports_dir, output)
    return reports


def _grade(folders, suite, jobs, timeout, tests_dir, hide, scheduler, cluster, no_sandbox, syntax_scan, limits,
           progress):
    reports = {}
    with _progress(len(folders), progress) as bar:
        def record(student, report):
            reports[student] = report
            bar.set_postfix_str(student[:30])
            bar.update()

        if scheduler or cluster:
            _grade_on_cluster(folders, suite, timeout, scheduler, cluster, record, no_sandbox)
        else:
            _grade_locally(hide, folders, suite, jobs, timeout, tests_dir, record, syntax_scan, limits)
    return reports


def _flag_lateness(reports: dict[str, Report], checkouts: Mapping[str, Checkout], clones: Mapping[str, Path]) -> None:
    """Each late student's flag (their late commits, the one graded, the penalty); a folder that is no git
    clone says the deadline was not checked. The report names the clone and commit graded, not the temporary
    folder it was graded in."""
    for student, report in reports.items():
        checkout = checkouts.get(student)
        if checkout is not None and checkout.graded is not None:
            report.impl = f"{clones[student]} at commit {checkout.graded.sha}"
        text = checkout.flag_text() if checkout else NO_HISTORY
        if checkout and checkout.graded is None:
            text = f"late: {checkout.why}" + (f"; {len(checkout.late)} commit(s) after it" if checkout.late else "")
        if text:
            report.flags.append(Flag.from_json(text))


def _write_class_report(reports_dir, output):
    """The class's figures over every stored report (with --only, the students kept too); a failure here
    costs a line, never the gradebook written before it."""
    from instructor import classreport

    try:
        classreport.write(classreport.summarize(classreport.load_reports(reports_dir)),
                          classreport.class_report_path(output))
    except Exception as error:  # the grades stand whatever the report does
        print(f"class report not written: {type(error).__name__}: {error}", file=sys.stderr)


def _write_results(reports, reports_dir, output, roster, keep, checkouts, quiet=False):
    # first: nothing about one student's report may cost the gradebook
    write_gradebook(reports, output, keep=keep, checkouts=checkouts)
    for student, report in reports.items():
        write_private(reports_dir / report_file_name(student), json.dumps(report.to_json(), indent=2))
    if roster:
        from instructor import lms

        unmatched = lms.add_roster(output, roster)
        if not quiet:
            lms.report(unmatched, sys.stderr)


MAX_NAME_BYTES = 200  # file systems take 255 bytes per name; the rest is room for the digest and ".json"


def report_file_name(student: str) -> str:
    """STUDENT.json; a name too long for a file system is cut and given a digest of the whole, so that it
    stays unique."""
    encoded = student.encode(errors="surrogateescape")
    if len(encoded) <= MAX_NAME_BYTES:
        return f"{student}.json"
    cut = encoded[:MAX_NAME_BYTES].decode(errors="ignore")
    return f"{cut}-{hashlib.sha256(encoded).hexdigest()[:12]}.json"


def _progress(total, enabled):
    from tqdm import tqdm

    return tqdm(total=total, unit="student", file=sys.stderr, disable=not enabled, dynamic_ncols=True)


def _grade_locally(hide, folders, suite, jobs, timeout, tests_dir, record, syntax_scan, limits):
    _, suite_dir = suite_paths(suite, tests_dir)
    before = fingerprint(suite_dir)
    with warm_launcher(hide) as launcher, ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(grade_folder, folder, suite, timeout, tests_dir, hide, launcher, syntax_scan,
                               limits): folder
                   for folder in folders}
        for future in as_completed(futures):
            record(futures[future].name, future.result())
    if fingerprint(suite_dir) != before:
        raise RuntimeError("the grading files changed during the batch: grades are not trustworthy, rerun it")


def _grade_on_cluster(folders, suite, timeout, scheduler, cluster, record, no_sandbox):
    from instructor.cluster import Job, connect, grade_on_cluster
    from instructor.preflight import check_workers

    jobs = []
    for folder in folders:
        impl = find_impl(folder)
        jobs.append(Job(folder.name, impl.read_bytes() if impl is not None and impl.is_file() else None))
    with connect(scheduler, cluster) as client:
        check_workers(client, scheduler or "", suite, no_sandbox)  # one line if any worker cannot grade
        grade_on_cluster(jobs, suite, timeout, client, record, no_sandbox)


def _flag_similar(folders, reports, output):
    from instructor import similarity

    files = {folder.name: impl for folder in folders if (impl := find_impl(folder)) is not None and impl.is_file()}
    try:
        return similarity.flag_class(files, reports, output)
    except similarity.SimilarityTimeout as error:
        print(f"similarity: {error}", file=sys.stderr)
        return False


def gradebook_row(student: str, report: Report, task_ids: list[str]) -> list[str | float]:
    """One student's row; a student the grader failed on has no scores and "not graded" as total."""
    flags = " | ".join(flag.to_json() for flag in report.flags)
    if not_graded(report):
        return [shown_name(student), *([""] * len(task_ids)), NOT_GRADED, "", flags]
    scores = [task.score if (task := report.tasks.get(task_id)) else 0.0 for task_id in task_ids]
    return [shown_name(student), *scores, report.score, report.max_score, flags]


def write_gradebook(reports: dict[str, Report], output: str | Path, keep: bool = False,
                    checkouts: Mapping[str, Checkout] | None = None) -> None:
    """The CSV gradebook. checkouts (batch --deadline): each student's commit graded and lateness in columns
    after flags, and total cut by the late penalty (the task columns keep what the code earned).
    keep: the rows of students not in reports stay as the file at output has them, byte for byte; the
    students regraded keep their values of the columns this run does not write (--roster's identifier)."""
    task_ids = [task.id for task in TASKS]
    extra = sorted({t for report in reports.values() for t in report.tasks} - set(task_ids))
    more_columns = list(LATE_COLUMNS) if checkouts is not None else []
    header = ["student", *task_ids, *extra, "total", "max_score", "flags", *more_columns]
    rows: dict[str, list] = {}
    for student, report in reports.items():
        row = gradebook_row(student, report, task_ids + extra)
        checkout = (checkouts or {}).get(student)
        if checkout is not None and not not_graded(report):
            row[header.index("total")] = checkout.penalized(report.score)
        values = checkout.columns() if checkout is not None else {}
        rows[shown_name(student)] = [*row, *(values.get(column, "") for column in more_columns)]
    if keep and Path(output).is_file():
        header, rows = _merged(output, header, rows)
    with open_private(output, newline="", encoding="utf-8") as handle:
        writer = csvsafe.writer(handle)  # a folder name is the student's to choose: no formulas
        writer.writerow(header)
        for student in sorted(rows):
            writer.writerow(rows[student])


def _merged(output: str | Path, header: list[str], rows: dict[str, list]) -> tuple[list[str], dict[str, list]]:
    """The gradebook at output with rows replacing its students' rows, in its own columns (new ones last)."""
    with open(output, newline="", encoding="utf-8") as handle:
        old = [row for row in csv.reader(handle) if row]
    if not old or old[0][:1] != ["student"]:
        return header, rows
    columns = old[0] + [column for column in header if column not in old[0]]
    kept = {csvsafe.original(row[0]): row + [""] * (len(columns) - len(row)) for row in old[1:]}
    for student, row in rows.items():
        by_name = dict(zip(columns, kept.get(student, []), strict=False)) | dict(zip(header, row, strict=True))
        kept[student] = [by_name.get(column, "") for column in columns]
    return columns, kept


def not_graded_students(output: str | Path) -> set[str]:
    """The students whose row in the gradebook at output says not graded."""
    with open(output, newline="") as handle:
        return {row["student"] for row in csv.DictReader(handle) if row.get("total") == NOT_GRADED}
