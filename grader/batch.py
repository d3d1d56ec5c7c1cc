"""Grade a whole class: one sub-folder per student, in parallel, into a CSV gradebook and one JSON
report per student. A broken submission costs its student only."""

import csv
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from grader.grade import grade
from grader.run import fingerprint, suite_paths
from grader.sandbox import require
from grader.tasks import TASKS


class Progress:
    def __init__(self, total, stream=sys.stderr):
        self.total, self.done, self.stream, self.started = total, 0, stream, time.monotonic()

    def step(self, label):
        self.done += 1
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        elapsed = time.monotonic() - self.started
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {elapsed:5.1f}s {label[:30]:<30}"
        )
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def submissions(root):
    return sorted(path for path in Path(root).iterdir() if path.is_dir() and not path.name.startswith("."))


def _grade_safely(folder, suite, timeout, tests_dir):
    try:
        return grade(folder, suite, timeout=timeout, tests_dir=tests_dir, prespawn=False)
    except Exception as error:  # one broken submission never stops the class
        return {"score": 0.0, "max_score": 0.0, "tasks": {}, "tests": [], "impl": str(folder), "suite": suite,
                "flags": [f"grader error: {type(error).__name__}: {error}"], "execution_time": 0.0}


def run_batch(root, suite="all", jobs=2, output="grades.csv", reports_dir=None, timeout=600.0, tests_dir=None,
              progress=True, no_sandbox=False):
    """no_sandbox: grade even where grader.sandbox cannot isolate the students from each other."""
    require("batch", no_sandbox)
    folders = submissions(root)
    os.environ["GRADER_SANDBOX_HIDE"] = str(Path(root).resolve())  # no worker reads a classmate's folder
    try:
        return _grade_all(folders, suite, jobs, output, reports_dir, timeout, tests_dir, progress)
    finally:
        os.environ.pop("GRADER_SANDBOX_HIDE", None)


def _grade_all(folders, suite, jobs, output, reports_dir, timeout, tests_dir, progress):
    reports_dir = Path(reports_dir or Path(output).with_suffix("").as_posix() + "-reports")
    reports_dir.mkdir(parents=True, exist_ok=True)
    _, suite_dir = suite_paths(suite, tests_dir)
    before = fingerprint(suite_dir)
    bar = Progress(len(folders)) if progress else None
    reports = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_grade_safely, folder, suite, timeout, tests_dir): folder for folder in folders}
        for future in as_completed(futures):
            folder = futures[future]
            reports[folder.name] = future.result()
            (reports_dir / f"{folder.name}.json").write_text(json.dumps(reports[folder.name], indent=2))
            if bar:
                bar.step(folder.name)
    if fingerprint(suite_dir) != before:
        raise RuntimeError("the grading files changed during the batch: grades are not trustworthy, rerun it")
    write_gradebook(reports, output)
    return reports


def write_gradebook(reports, output):
    task_ids = [task.id for task in TASKS]
    extra = sorted({t for report in reports.values() for t in report["tasks"]} - set(task_ids))
    with open(output, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *task_ids, *extra, "total", "max_score", "flags"])
        for student in sorted(reports):
            report = reports[student]
            row = [student]
            for task_id in task_ids + extra:
                task = report["tasks"].get(task_id)
                row.append(task["score"] if task else 0.0)
            row += [report["score"], report["max_score"], " | ".join(report["flags"])]
            writer.writerow(row)
