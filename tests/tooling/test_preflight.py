"""Bad input to batch and canvas-export is one line naming the argument and what to fix, before any
grading; a Dask worker that cannot run the grader is named by the preflight; a batch that stops making
progress says why and stops; the end of a batch says how the class went."""

import csv
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.paths import REPO
from grader.report import Flag, FlagKind
from instructor import preflight, summary
from instructor.batch import error_report

DASK = Path(sys.executable).parent / "dask"


def instructor(*args, cwd=REPO):
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "instructor", *map(str, args)], cwd=cwd, capture_output=True,
                            text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    return result, time.monotonic() - started


def one_line(result, *needles):
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def klass(tmp_path):
    (tmp_path / "class" / "ada").mkdir(parents=True)
    (tmp_path / "class" / "ada" / "attention.py").write_text("")
    return tmp_path / "class"


def write_csv(path, rows):
    with open(path, "w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


def test_batch_on_a_folder_that_does_not_exist_is_one_line():
    result, _ = instructor("batch", "/nope")
    one_line(result, "SUBMISSIONS /nope", "no such folder")


def test_a_missing_roster_is_refused_before_any_grading(klass, tmp_path):
    result, _ = instructor("batch", klass, "--roster", tmp_path / "missing.csv", "--output", tmp_path / "g.csv")
    one_line(result, "--roster", "no such file", "roster export")
    assert not (tmp_path / "g.csv").exists()


def test_a_roster_without_usernames_is_refused_before_any_grading(klass, tmp_path):
    roster = write_csv(tmp_path / "roster.csv", [["name", "email"], ["Ada", "ada@uni.example"]])
    result, _ = instructor("batch", klass, "--roster", roster, "--output", tmp_path / "g.csv")
    one_line(result, "--roster", "no identifier, github_username column")
    assert not (tmp_path / "g.csv").exists()


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_scheduler_with_nothing_listening_fails_fast_in_one_line(klass, tmp_path):
    address = f"tcp://127.0.0.1:{free_port()}"
    result, took = instructor("batch", klass, "--scheduler", address, "--output", tmp_path / "g.csv")
    one_line(result, f"--scheduler {address}", "start `dask scheduler` there")
    assert took < 20


@pytest.mark.parametrize("address", ["http://host:8786", "tcp://:8786", "tcp://host:port"])
def test_a_scheduler_address_that_is_no_address_is_refused(address):
    with pytest.raises(preflight.BadInput, match="^--scheduler .*tcp://HOST:8786"):
        preflight.scheduler_endpoint(address)


def test_a_malformed_cluster_is_refused(klass, tmp_path):
    result, _ = instructor("batch", klass, "--cluster", "locl:2", "--output", tmp_path / "g.csv")
    one_line(result, "--cluster takes local:N")


def test_canvas_export_with_a_file_that_is_no_canvas_export_is_one_line(tmp_path):
    gradebook = write_csv(tmp_path / "grades.csv", [["student", "identifier", "total"], ["ada", "a@x", "9"]])
    canvas = write_csv(tmp_path / "canvas.csv", [["Name", "Score"], ["Ada", "1"]])
    result, _ = instructor("canvas-export", "--gradebook", gradebook, "--canvas", canvas, "--column", "Lab 03",
                           "--output", tmp_path / "out.csv")
    one_line(result, "--canvas", "no Student column", "Grades > Export")
    assert not (tmp_path / "out.csv").exists()


def test_canvas_export_with_a_missing_gradebook_is_one_line(tmp_path):
    canvas = write_csv(tmp_path / "canvas.csv", [["Student", "ID"], ["Ada", "1"]])
    result, _ = instructor("canvas-export", "--gradebook", tmp_path / "nope.csv", "--canvas", canvas,
                           "--column", "Lab 03")
    one_line(result, "--gradebook", "no such file")


# -- a real scheduler and a worker started as a Dask host would start them, without this project -------------

@pytest.fixture(scope="module")
def bare_cluster(tmp_path_factory):
    """`dask scheduler` and one `dask worker` from a folder where neither grader nor instructor imports."""
    folder = tmp_path_factory.mktemp("bare")
    scheduler_file = folder / "scheduler.json"
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    common = dict(cwd=folder, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    processes = [subprocess.Popen([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                   "--scheduler-file", str(scheduler_file)], **common)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        processes.append(subprocess.Popen([str(DASK), "worker", "--scheduler-file", str(scheduler_file),
                                           "--nthreads", "1", "--no-dashboard"], **common))
        import json

        yield json.loads(scheduler_file.read_text())["address"]
    finally:
        for process in processes[::-1]:
            process.terminate()
            process.wait(timeout=30)


def test_a_worker_that_cannot_import_the_grader_stops_the_batch_in_one_line(bare_cluster):
    from distributed import Client

    with Client(bare_cluster, timeout=30) as client:
        with pytest.raises(preflight.BadInput) as refused:
            preflight.check_workers(client, bare_cluster, "public", no_sandbox=False, timeout=30)
    text = str(refused.value)
    assert "\n" not in text and f"--scheduler {bare_cluster}: worker tcp://127.0.0.1:" in text
    assert "cannot run the grader (ModuleNotFoundError" in text and "pip install -e ." in text


def test_a_batch_in_which_nothing_completes_says_why_and_stops(bare_cluster):
    from distributed import Client

    with Client(bare_cluster, timeout=30) as client:
        futures = [client.submit(time.sleep, 60, pure=False)]
        started = time.monotonic()
        with pytest.raises(preflight.Stalled, match=r"no student was graded in 2 s \(1 waiting, 1 workers"):
            list(preflight.completing(futures, idle_limit=2, client=client))
        assert time.monotonic() - started < 10
        client.cancel(futures)


def test_a_worker_that_can_grade_passes_the_preflight():
    from instructor.cluster import connect

    with connect(None, "local:1") as client:
        answers = preflight.check_workers(client, "", "public", no_sandbox=False, timeout=60)
    assert [answer["level"] for answer in answers] == ["namespaces"] or pytest.skip("no namespaces level here")


# -- the end of a batch -------------------------------------------------------------------------------------

def test_the_end_of_a_batch_counts_graded_missing_not_graded_flagged_and_gives_mean_median_and_files(tmp_path):
    def graded(score, *flags):
        report = error_report("x", "public", "x")
        report.flags = list(flags)
        report.score = score
        return report

    reports = {
        "ada": graded(100.0), "bob": graded(50.0, Flag(FlagKind.SIMILAR, "ada (90%)")), "cy": graded(30.0),
        "dee": graded(0.0, Flag(FlagKind.MISSING, "no attention.py in the submission")),
        "eve": error_report("eve", "public", "boom"),
    }
    said = summary.lines(reports, tmp_path / "grades.csv")
    assert said[0] == ("batch: 5 students: 3 graded, 1 missing (no attention.py), 1 not graded (grader error: "
                       "rerun them alone), 1 graded with flags")
    assert "mean 60.0, median 50" in said[1]
    assert any(line.strip() == "not graded: eve" for line in said)
    assert any("flagged (read their reports): bob" in line for line in said)
    assert said[-1].endswith(f"files: {tmp_path / 'grades.csv'}, {tmp_path / 'grades-reports'}")
