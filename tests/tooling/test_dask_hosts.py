"""batch --scheduler on hosts prepared as docs/instructors.md says: the project pip-installed (editable) into
the hosts' Python, `dask scheduler` and two `dask worker`s started from a folder outside the checkout, on
127.0.0.1. The gradebook equals a local `--jobs 2` batch's, byte for byte."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from grader.paths import REPO
from instructor.cluster import environment

CLASS = {"ada": REPO / "solutions" / "attention.py", "bob": REPO / "assignment" / "attention.py", "cy": None}


@pytest.fixture(scope="module")
def host_python(tmp_path_factory):
    """A fresh venv with this checkout `pip install -e`d into it; its other packages are this Python's."""
    if subprocess.run([sys.executable, "-c", "import setuptools"], capture_output=True).returncode != 0:
        pytest.skip("the build backend (--no-build-isolation) is this Python's setuptools, which it lacks")
    venv = tmp_path_factory.mktemp("host") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "host-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # torch, dask, pip, ...
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                                "--no-index", "-e", str(REPO)], cwd=venv, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


def without_project_on_path():
    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def scheduler(host_python, tmp_path_factory):
    """`dask scheduler` and two `dask worker`s (two "hosts"), all started outside the checkout."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    scheduler_file = elsewhere / "scheduler.json"
    env = {**without_project_on_path(), **environment()}
    common = dict(cwd=elsewhere, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dask = [str(host_python), "-m", "dask"]
    processes = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                   "--scheduler-file", str(scheduler_file)], **common)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        for _ in range(2):
            processes.append(subprocess.Popen([*dask, "worker", address, "--nworkers", "1", "--nthreads", "1",
                                               "--no-dashboard"], **common))
        from distributed import Client

        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for process in processes[::-1]:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    for student, source in CLASS.items():
        (root / student).mkdir()
        if source is not None:
            shutil.copy(source, root / student / "attention.py")
    return root


def batch(klass, output, *how):
    return subprocess.run([sys.executable, "-m", "instructor", "batch", str(klass), "--suite", "public",
                           "--output", str(output), *how], cwd=REPO, capture_output=True, text=True, timeout=900)


def test_dask_hosts_set_up_as_documented_grade_the_class_as_local_processes_do(scheduler, klass, tmp_path):
    on_dask = batch(klass, tmp_path / "dask.csv", "--scheduler", scheduler)
    assert on_dask.returncode == 0, on_dask.stderr[-3000:]
    local = batch(klass, tmp_path / "local.csv", "--jobs", "2")
    assert local.returncode == 0, local.stderr[-3000:]
    assert (tmp_path / "dask.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()
    assert on_dask.stdout.startswith("batch: 3 students: 2 graded, 1 missing"), on_dask.stdout
