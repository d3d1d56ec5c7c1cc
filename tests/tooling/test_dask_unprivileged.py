"""Class grading without root, as a Slurm job does it: a `dask scheduler` and a `dask worker --nworkers 2`
started by an ordinary user (uid 65534, through tests/tooling/at_level.py), whose grader gets the
user-namespace level. `batch --scheduler` on them, and a local `batch --jobs 2` by that user, write the
gradebook a local batch as root (the namespaces level) writes, byte for byte; and a student's worker there
cannot reach the scheduler's port, which the grader beside it reaches."""

import json
import subprocess
import sys

import pytest

from grader.paths import REPO
from instructor.batch import run_batch
from tests.tooling import at_level

CLASS = {
    "ada": (REPO / "solutions" / "attention.py").read_text(),
    "bob": (REPO / "assignment" / "attention.py").read_text(),
    "cy": None,  # submitted nothing
    "dee": "import os\nos._exit(3)\n",
}

# Runs as uid 65534 (its TMPDIR and HOME are its own folder): the class, the cluster, both batches, and
# whether a student's worker reaches the scheduler's port; prints JSON.
AS_A_USER = r"""
import json, os, subprocess, sys, tempfile, time
PROBE = '''import socket

def connect(host, port):
    try:
        socket.create_connection((host, port), timeout=1).close()
        return "connected"
    except OSError as error:
        return type(error).__name__
'''
from pathlib import Path
from grader.sandbox.isolation import level
from instructor.cluster import environment

base = Path(tempfile.mkdtemp(prefix="slurm-like-"))
klass = base / "class"
for student, text in json.loads(sys.argv[1]).items():
    (klass / student).mkdir(parents=True)
    if text is not None:
        (klass / student / "attention.py").write_text(text)
env = {**os.environ, **environment()}
quiet = dict(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
dask = [sys.executable, "-m", "dask"]
scheduler_file = base / "scheduler.json"
processes = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(scheduler_file)], **quiet)]

def batch(output, *how):
    done = subprocess.run([sys.executable, "-m", "instructor", "batch", str(klass), "--suite", "public",
                           "--output", str(base / output), *how], env=env, capture_output=True, text=True,
                          timeout=900)
    csv = (base / output).read_text() if (base / output).exists() else ""
    return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-3000:], "csv": csv}

try:
    deadline = time.monotonic() + 120
    while not scheduler_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    address = json.loads(scheduler_file.read_text())["address"]
    processes.append(subprocess.Popen([*dask, "worker", address, "--nworkers", "2", "--nthreads", "1",
                                       "--no-dashboard"], **quiet))
    from distributed import Client
    with Client(address, timeout=60) as client:
        client.wait_for_workers(2, timeout=120)
    results = {"uid": os.getuid(), "level": level(), "dask": batch("dask.csv", "--scheduler", address),
               "local": batch("local.csv", "--jobs", "2")}
    from grader.sandbox.proxy import Submission  # a student's worker at this level, beside the cluster
    probe = base / "probe" / "attention.py"
    probe.parent.mkdir()
    probe.write_text(PROBE)
    exec(PROBE)
    host, port = address.removeprefix("tcp://").rsplit(":", 1)
    submission = Submission(probe)
    try:
        results["scheduler reached"] = {"by the grader": connect(host, int(port)),
                                        "by a student's worker": submission.connect(host, int(port))}
    finally:
        submission.stop()
finally:
    for process in processes[::-1]:
        process.terminate()
    for process in processes:
        process.wait(timeout=60)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def as_a_user():
    why = at_level.unavailable("user-namespace")
    if why:
        pytest.skip(why)
    done = subprocess.run(at_level.argv("user-namespace", [sys.executable, "-c", AS_A_USER, json.dumps(CLASS)]),
                          cwd=REPO, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def as_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    for student, text in CLASS.items():
        (root / student).mkdir()
        if text is not None:
            (root / student / "attention.py").write_text(text)
    output = tmp_path_factory.mktemp("root") / "grades.csv"
    run_batch(root, "public", jobs=2, output=output, progress=False)
    return output.read_text()


def test_an_ordinary_users_grader_gets_the_user_namespace_level(as_a_user):
    assert (as_a_user["uid"], as_a_user["level"]) == (at_level.ORDINARY_UID, "user-namespace")


def test_a_student_on_such_a_host_cannot_reach_the_dask_scheduler(as_a_user):
    """Dask's ports take tasks from anyone who connects: the student's worker has a network of its own."""
    reached = as_a_user["scheduler reached"]
    assert reached["by the grader"] == "connected" and reached["by a student's worker"] != "connected", reached


@pytest.mark.parametrize("how", ["dask", "local"])
def test_an_ordinary_user_grades_the_class_as_root_does(as_a_user, as_root, how):
    run = as_a_user[how]
    assert run["rc"] == 0, run["stderr"]
    assert run["stdout"].startswith("batch: 4 students: 3 graded, 1 missing"), run["stdout"]
    assert run["csv"] == as_root
