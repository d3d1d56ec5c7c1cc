"""Grade a whole class: one sub-folder per student, in parallel (local processes, or a Dask cluster:
instructor.cluster), into a CSV gradebook and one JSON report per student. A broken submission costs its
student only. Options join GitHub Classroom's roster (instructor.lms) and flag similar code (instructor.similarity)."""

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from grader.grade import grade
from grader.paths import Env, find_impl
from grader.report import FlagKind, Report, failure_report
from grader.run import fingerprint, suite_paths, warm_servers
from grader.sandbox.isolation import require
from grader.tasks import TASKS
from instructor import csvsafe


def submissions(root):
    return sorted(path for path in Path(root).iterdir() if path.is_dir() and not path.name.startswith("."))


def error_report(folder: str | Path, suite: str, why: str) -> Report:
    """Every test unknown, no points: the report of a student the grader itself could not grade."""
    return failure_report(FlagKind.GRADER_ERROR, why, suite, str(folder))


def grade_folder(folder: Path, suite: str, timeout: float, tests_dir: str | Path | None = None) -> Report:
    try:
        return grade(folder, suite, timeout=timeout, tests_dir=tests_dir, prespawn=False)
    except Exception as error:  # one broken submission never stops the class
        return error_report(folder, suite, f"{type(error).__name__}: {error}")


def run_batch(root, suite="all", jobs=2, output="grades.csv", reports_dir=None, timeout=600.0, tests_dir=None,
              progress=True, no_sandbox=False, scheduler=None, cluster=None, roster=None, similarity=False):
    """no_sandbox: grade even where grader.sandbox.isolation cannot isolate the students from each other.
    scheduler / cluster: grade on Dask (an address, or "local:N") instead of `jobs` local processes.
    roster: GitHub Classroom's roster CSV, joined into the gradebook. similarity: flag similar code."""
    if not (scheduler or cluster):  # on Dask, each task requires the sandbox on the host that grades it
        require("batch", no_sandbox)
    folders = submissions(root)
    reports_dir = Path(reports_dir or Path(output).with_suffix("").as_posix() + "-reports")
    reports_dir.mkdir(parents=True, exist_ok=True)
    reports = {}
    with _progress(len(folders), progress) as bar:
        def record(student, report):
            reports[student] = report
            bar.set_postfix_str(student[:30])
            bar.update()

        if scheduler or cluster:
            _grade_on_cluster(folders, suite, timeout, scheduler, cluster, record, no_sandbox)
        else:
            _grade_locally(root, folders, suite, jobs, timeout, tests_dir, record)
    _write_results(reports, reports_dir, output, roster)
    if similarity and _flag_similar(folders, reports, output):  # last: the grades above stand whatever it does
        _write_results(reports, reports_dir, output, roster, quiet=True)
    return reports


def _write_results(reports, reports_dir, output, roster, quiet=False):
    for student, report in reports.items():
        (reports_dir / f"{student}.json").write_text(json.dumps(report.to_json(), indent=2))
    write_gradebook(reports, output)
    if roster:
        from instructor import lms

        unmatched = lms.add_roster(output, roster)
        if not quiet:
            lms.report(unmatched, sys.stderr)


def _progress(total, enabled):
    from tqdm import tqdm

    return tqdm(total=total, unit="student", file=sys.stderr, disable=not enabled, dynamic_ncols=True)


def _grade_locally(root, folders, suite, jobs, timeout, tests_dir, record):
    _, suite_dir = suite_paths(suite, tests_dir)
    before = fingerprint(suite_dir)
    os.environ[Env.SANDBOX_HIDE] = str(Path(root).resolve())  # no worker reads a classmate's folder
    try:
        with warm_servers([Path(root).resolve()]), ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(grade_folder, folder, suite, timeout, tests_dir): folder for folder in folders}
            for future in as_completed(futures):
                record(futures[future].name, future.result())
    finally:
        os.environ.pop(Env.SANDBOX_HIDE, None)
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


def write_gradebook(reports: dict[str, Report], output: str | Path) -> None:
    task_ids = [task.id for task in TASKS]
    extra = sorted({t for report in reports.values() for t in report.tasks} - set(task_ids))
    with open(output, "w", newline="") as handle:
        writer = csvsafe.writer(handle)  # a folder name is the student's to choose: no formulas
        writer.writerow(["student", *task_ids, *extra, "total", "max_score", "flags"])
        for student in sorted(reports):
            report = reports[student]
            row: list[str | float] = [student]
            for task_id in task_ids + extra:
                task = report.tasks.get(task_id)
                row.append(task.score if task else 0.0)
            row += [report.score, report.max_score, " | ".join(flag.to_json() for flag in report.flags)]
            writer.writerow(row)
