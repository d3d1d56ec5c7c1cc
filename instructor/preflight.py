"""Before batch or canvas-export grades or writes anything: every argument checked, and on Dask every
worker asked to run a tiny task. Whatever is wrong is one line naming the argument and what to fix
(BadInput), never a traceback after an hour of grading. During a Dask batch, `completing` stops a batch
in which no student is graded for a bounded time, saying why.
"""

import argparse
import csv
import hashlib
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from instructor.deadline import Deadline

CONNECT_TIMEOUT = 5.0  # seconds for a scheduler to accept a connection
PROBE_TIMEOUT = 60.0  # seconds for every worker to answer the preflight task
STALL_MARGIN = 300.0  # seconds beyond the per-student timeout with no student graded: the batch stops
ROSTER_COLUMNS = ("identifier", "github_username")
# Dask's ports take unauthenticated tasks: only a level whose workers have a network namespace of their own
# keeps students off them (at the uid-only level a worker shares the host's). Root gives "namespaces"; a Slurm
# job, never root, gives "user-namespace": the same namespaces and view, the grader's uid, no cgroups.
DASK_LEVELS = ("namespaces", "user-namespace")


class BadInput(ValueError):
    """One line: the argument, what is wrong with it, what to do."""


class Stalled(RuntimeError):
    """No student was graded for too long: the batch stops instead of waiting forever."""


# -- arguments ------------------------------------------------------------------------------------------

def _csv_header(option: str, path: str | Path, needed: Iterable[str], fix: str) -> list[dict[str, str]]:
    """The rows of the CSV at path; BadInput if it is missing, unreadable or lacks a needed column."""
    file = Path(path)
    if not file.is_file():
        raise BadInput(f"{option} {path}: no such file: {fix}")
    try:
        with open(file, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            columns = reader.fieldnames or []
    except (UnicodeDecodeError, csv.Error, OSError) as error:
        raise BadInput(f"{option} {path}: not a readable CSV file ({error}): {fix}") from None
    missing = [column for column in needed if column not in columns]
    if missing:
        raise BadInput(f"{option} {path}: no {', '.join(missing)} column (it has {', '.join(columns) or 'none'}): "
                       f"{fix}")
    return rows


def check_roster(path: str | Path) -> None:
    fix = "give GitHub Classroom's roster export (the assignment's Download > roster)"
    if not _csv_header("--roster", path, ROSTER_COLUMNS, fix):
        raise BadInput(f"--roster {path}: no students in it: {fix}")


def scheduler_endpoint(address: str) -> tuple[str, int]:
    """(host, port) of a Dask scheduler address such as tcp://10.0.0.5:8786; BadInput if it names none."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        port = parts.port or 8786
    except ValueError:
        port = -1
    if parts.scheme not in ("tcp", "tls") or not parts.hostname or port < 1:
        raise BadInput(f"--scheduler {address}: not a Dask scheduler address: write it as tcp://HOST:8786")
    return parts.hostname, port


def check_scheduler(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    host, port = scheduler_endpoint(address)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as error:
        reason = "nothing answered" if isinstance(error, TimeoutError) else error.strerror or str(error)
        raise BadInput(f"--scheduler {address}: no scheduler at {host}:{port} ({reason} within {timeout:g} s): "
                       "start `dask scheduler` there, or fix the address") from None


def check_batch(args: argparse.Namespace) -> None:
    """Every argument of `batch`, before any grading."""
    root = Path(args.submissions)
    if not root.is_dir():
        what = "no such folder" if not root.exists() else "not a folder"
        raise BadInput(f"batch SUBMISSIONS {root}: {what}: give the folder holding one sub-folder per student")
    if not any(path.is_dir() and not path.name.startswith(".") for path in root.iterdir()):
        raise BadInput(f"batch SUBMISSIONS {root}: no sub-folders: it must hold one folder per student")
    if args.only:
        from instructor.gradebook import shown_name, submissions

        names = {shown_name(folder.name) for folder in submissions(root)}
        unknown = [name for name in args.only if name not in names]
        if unknown:
            raise BadInput(f"--only {' '.join(unknown)}: no such student folder in {root}: give folder names as "
                           "the gradebook's student column writes them")
    if args.jobs < 1:
        raise BadInput(f"--jobs {args.jobs}: give 1 or more parallel students")
    if not args.timeout > 0:
        raise BadInput(f"--timeout {args.timeout:g}: give a number of seconds above 0")
    output = Path(args.output)
    if output.suffix.lower() != ".csv":
        raise BadInput(f"--output {output}: name a .csv file (the reports go beside it)")
    if not output.resolve().parent.is_dir():
        raise BadInput(f"--output {output}: the folder {output.resolve().parent} does not exist: make it first")
    if args.roster:
        check_roster(args.roster)
    deadline_of(args)
    if args.cluster:
        try:
            local_workers(args.cluster)
        except ValueError as error:
            raise BadInput(str(error)) from None
    if args.scheduler:
        check_scheduler(args.scheduler)


def deadline_of(args: argparse.Namespace) -> "Deadline | None":
    """batch's --deadline, --extensions and --late-policy as one value (None without --deadline); BadInput
    (one line) for a time without its offset, an extensions file that is not student,deadline, a policy that
    is none of the forms."""
    from instructor.deadline import Deadline, parse_policy, parse_time, read_extensions

    if not args.deadline:
        for option, value in (("--extensions", args.extensions), ("--late-policy", args.late_policy)):
            if value:
                raise BadInput(f"{option}: give --deadline ISO-TIME too (the class's deadline)")
        return None
    try:
        return Deadline(parse_time(args.deadline), read_extensions(args.extensions) if args.extensions else {},
                        parse_policy(args.late_policy or "none"))
    except ValueError as error:
        raise BadInput(str(error)) from None


def local_workers(cluster: str) -> int:
    """N of --cluster local:N; ValueError for anything else."""
    kind, _, count = cluster.partition(":")
    if kind != "local" or not count.isdigit() or int(count) < 1:
        raise ValueError(f"--cluster takes local:N with N >= 1 worker processes, got {cluster!r}")
    return int(count)


def check_canvas_export(args: argparse.Namespace) -> None:
    """Every argument of `canvas-export`, before anything is written."""
    rows = _csv_header("--gradebook", args.gradebook, ("student", "total"),
                       "give the grades.csv that batch wrote (with --roster)")
    if rows and "identifier" not in rows[0]:
        raise BadInput(f"--gradebook {args.gradebook}: no identifier column: run batch with --roster first")
    _csv_header("--canvas", args.canvas, ("Student",), "export the gradebook from Canvas (Grades > Export)")
    if not args.column.strip():
        raise BadInput('--column: give the assignment column as Canvas names it, such as "Lab 03 (4242)"')
    if not Path(args.output).resolve().parent.is_dir():
        raise BadInput(f"--output {args.output}: its folder does not exist: make it first")


# -- Dask workers ---------------------------------------------------------------------------------------

def grading_files_digest(suite: str) -> str:
    """A hash of the grading files' contents and relative paths (the same for checkouts at any path)."""
    from grader.paths import GRADER, REPO
    from grader.run import suite_paths

    _, tests_dir = suite_paths(suite)
    digest = hashlib.sha256()
    for root in (Path(tests_dir), GRADER):
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(REPO)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def probe(suite: str, no_sandbox: bool) -> dict[str, str]:
    """Runs on a worker: what it would grade with. Importing this module there is half the test."""
    import socket as sockets

    from grader.sandbox.isolation import SandboxUnavailable, level, require

    answer = {"host": sockets.gethostname(), "level": level(), "problem": ""}
    try:
        answer["digest"] = grading_files_digest(suite)
        require("batch on a Dask worker", no_sandbox, levels=DASK_LEVELS)
    except SandboxUnavailable:
        answer["problem"] = (f"its sandbox level is {answer['level']}, Dask hosts need {' or '.join(DASK_LEVELS)}: "
                             "run `dask worker` as root, or as a user who may make user namespaces "
                             "(`unshare --user --map-root-user --net true` succeeds there), or pass --no-sandbox "
                             "for trusted code only")
    except Exception as error:  # no tests there, a broken checkout: said in one line
        answer["problem"] = f"it cannot read the grading files ({type(error).__name__}: {error})"
    return answer


def briefly(error: BaseException) -> str:
    """The error in one short line: the ImportError behind it if there is one (Dask wraps a worker's or the
    scheduler's ModuleNotFoundError in a RuntimeError with a page of advice)."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    cause = next((each for each in chain if isinstance(each, ImportError)), error)
    first = (str(cause).strip().splitlines() or [""])[0][:200]
    return f"{type(cause).__name__}: {first}"


def check_workers(client: Any, address: str, suite: str, no_sandbox: bool,
                  timeout: float = PROBE_TIMEOUT) -> list[dict[str, str]]:
    """Run probe on every worker of the client's cluster; BadInput naming the first worker that cannot grade."""
    from distributed import TimeoutError as DaskTimeout

    option = f"--scheduler {address}" if address else "--cluster"
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (DaskTimeout, TimeoutError):
        raise BadInput(f"{option}: no worker joined within {timeout:g} s: start `dask worker {address or 'ADDRESS'}` "
                       "on the grading hosts") from None
    mine = grading_files_digest(suite)
    answers = []
    for worker in sorted(client.scheduler_info()["workers"]):
        future = client.submit(probe, suite, no_sandbox, workers=[worker], allow_other_workers=False, pure=False,
                               key=f"preflight-{worker}")
        try:
            answer = future.result(timeout=timeout)
        except (DaskTimeout, TimeoutError):
            raise BadInput(f"{option}: worker {worker} did not run a one-second task within {timeout:g} s: "
                           "is it stuck, or busy with another client's work?") from None
        except Exception as error:
            raise BadInput(f"{option}: worker {worker} cannot run the grader ({briefly(error)}): "
                           "on that host, `pip install -e .` in a checkout of this repository "
                           "(docs/instructors.md, On a cluster)") from None
        finally:
            future.release()
        if answer["problem"]:
            raise BadInput(f"{option}: worker {worker} on {answer['host']}: {answer['problem']}")
        if answer["digest"] != mine:
            raise BadInput(f"{option}: worker {worker} on {answer['host']} has other grading files than yours "
                           "(another commit?): check out the same commit there and restart the worker")
        answers.append(answer)
    return answers


def completing(futures: Iterable[Any], idle_limit: float, client: Any = None) -> Iterator[Any]:
    """The Dask futures as they complete; Stalled, saying why, once idle_limit seconds pass with none."""
    from distributed import TimeoutError as DaskTimeout
    from distributed import wait

    pending = set(futures)
    while pending:
        try:
            done, pending = wait(pending, timeout=idle_limit, return_when="FIRST_COMPLETED")
        except (DaskTimeout, TimeoutError):
            workers = len(client.scheduler_info()["workers"]) if client is not None else "?"
            raise Stalled(f"no student was graded in {idle_limit:g} s ({len(pending)} waiting, {workers} workers "
                          "connected): the workers are gone or cannot run the grading task; see their logs, "
                          "fix them, and rerun") from None
        yield from done
