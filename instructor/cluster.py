"""`batch` on a Dask cluster: each student is one task that any worker host may take.

    python -m instructor batch SUBMISSIONS --cluster local:2           a LocalCluster of 2 worker processes
    python -m instructor batch SUBMISSIONS --scheduler tcp://HOST:8786  a running scheduler (Slurm, Kubernetes, ...)

A task carries the student's attention.py itself (bytes), so the hosts need this project installed
and nothing shared: the task writes the file into a scratch folder there and runs the same grade as
a local batch, sandbox included. Only the client writes the gradebook and the reports.

- A worker that dies takes its task with it; the scheduler gives that student to another worker once
  (`allowed-failures` = 1). A second death is that student's `grader error`, never a lost row.
- Each task has its student's name as its key, so no student can be counted twice.
- A task that finds the grading files changed on its host (a submission edited them) stops the
  whole batch, as a local batch does.
"""

import contextlib
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.report import Report
from instructor.preflight import DASK_LEVELS, STALL_MARGIN, completing, local_workers

ALLOWED_FAILURES = 1
# Dask settings for grading: a task that dies is retried once (ALLOWED_FAILURES), and the workers stop what
# only a dashboard would use. Dask's defaults sample every worker thread's stack every 10 ms and wake each
# process every 20 ms: 0.14 CPU-s per second on an idle 2-worker cluster here, 0.03 with these.
# The LocalCluster gets them from connect(); docs/instructors.md gives them to clusters started by hand.
DASK_SETTINGS: dict[str, object] = {
    "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}


class GradingFilesChanged(RuntimeError):
    """A submission changed the grading files on a worker host: no grade of this batch is trusted."""


@dataclass(frozen=True)
class Job:
    student: str
    source: bytes | None  # None: the folder has no attention.py


def grade_job(job: Job, suite: str, timeout: float, no_sandbox: bool = False) -> tuple[str, Report, bool]:
    """Runs on a worker host: (student, report, whether the grading files changed meanwhile).
    Each Dask worker process runs one task at a time (threads_per_worker=1)."""
    from grader.run import fingerprint, suite_paths
    from grader.sandbox.isolation import require

    require("batch on a Dask worker", no_sandbox, levels=DASK_LEVELS)
    _, tests_dir = suite_paths(suite)
    before = fingerprint(tests_dir)
    report = _grade(job, suite, timeout)
    report.impl = job.student  # the scratch path means nothing to the client
    return job.student, report, fingerprint(tests_dir) != before


def _grade(job: Job, suite: str, timeout: float) -> Report:
    """The student's grade with this host's servers; graded once more with new ones if they died meanwhile
    (not the student's doing: a server ends only with its last channel, or by a fault of the host)."""
    from instructor import host
    from instructor.gradebook import grade_folder

    for _ in range(2):
        with tempfile.TemporaryDirectory(prefix="grade-", dir=host.shared().tasks) as scratch:
            folder = Path(scratch) / job.student
            folder.mkdir()
            if job.source is not None:
                (folder / "attention.py").write_bytes(job.source)
            report = grade_folder(folder, suite, timeout, hide=(scratch,), launcher=host.shared().launcher())
        if not host.forget_if_broken():
            break
    return report


def environment() -> dict[str, str]:
    """DASK_SETTINGS as the environment variables of a scheduler or worker started by hand."""
    return {"DASK_" + key.upper().replace(".", "__").replace("-", "_"): str(value)
            for key, value in DASK_SETTINGS.items()}


@contextlib.contextmanager
def connect(scheduler: str | None, cluster: str | None) -> Iterator[Any]:
    """A dask.distributed Client on the scheduler at ADDRESS, or on a new LocalCluster("local:N"),
    closed (with the LocalCluster) on exit."""
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set(DASK_SETTINGS):
        if scheduler:
            with Client(scheduler) as client:
                yield client
            return
        workers = local_workers(cluster or "")
        local = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        try:
            with Client(local) as client:
                yield client
        finally:
            close_local_cluster(local)


def close_local_cluster(local: Any) -> None:
    """Close a LocalCluster whose work is done. Closing while a nanny restarts a worker that died (a student's
    grading killed it) raises inside Dask ("can only join a started process"): the grades are in by then, so
    that costs one line on stderr, not the batch."""
    try:
        local.close()
    except Exception as error:  # Dask's own teardown; any error of the batch itself has been raised already
        print(f"batch: the local Dask cluster did not close cleanly ({type(error).__name__}: {error}); "
              "every grade was recorded", file=sys.stderr)


def grade_on_cluster(jobs: list[Job], suite: str, timeout: float, client: Any, on_result: Callable[..., None],
                     no_sandbox: bool = False, task: Callable[..., Any] = grade_job) -> None:
    """Submit every job, then hand each (student, report) to on_result as it completes."""
    from distributed import KilledWorker

    from instructor.gradebook import error_report

    futures = {
        client.submit(task, job, suite, timeout, no_sandbox, key=f"grade-{job.student}", pure=False):
            job.student
        for job in jobs
    }
    try:
        for future in completing(futures, timeout + STALL_MARGIN, client):  # Stalled when none completes
            student = futures[future]
            try:
                _, report, changed = future.result()
            except KilledWorker:
                report = error_report(student, suite, "the grading host died twice while grading it")
                changed = False
            if changed:
                raise GradingFilesChanged(
                    f"the grading files changed on a worker host while {student} was graded: rerun the batch"
                )
            on_result(student, report)
    finally:
        client.cancel(list(futures))
