"""Least privilege at the uid level, as on Gradescope: root without CAP_SYS_ADMIN, so no namespaces, and a venv
built from the system's python3.11 as setup.sh builds it. The worker's uid reads grader/ and the Python install,
and nothing else of the bundle: not the hidden tests. gradescope-run and batch refuse to grade while it could."""

import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

import jsonschema
import pytest

from grader.paths import REPO
from grader.sandbox import exposure
from grader.sandbox import isolation as sandbox
from instructor import gradescope

SCHEMA = json.loads((REPO / "tests/schemas/gradescope-results.schema.json").read_text())
SYSTEM_PYTHON = Path("/usr/bin/python3.11")  # what setup.sh's apt-get install gives on Ubuntu 22.04
SETPRIV = shutil.which("setpriv")
NO_SYS_ADMIN = (SETPRIV or "setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin")
SITE = Path(sysconfig.get_paths()["purelib"])  # torch and the grader's needs, shared into the test's venv


def _reachable_by_others(path: Path) -> bool:
    return all(os.stat(folder).st_mode & stat.S_IXOTH for folder in (path, *path.parents))


def _why_not() -> str | None:
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "needs root on Linux"
    if sandbox.level() != "namespaces" or not SETPRIV:
        return "needs a machine with namespaces to take them away (setpriv)"
    if not SYSTEM_PYTHON.is_file() or sys.version_info[:2] != (3, 11):
        return f"needs {SYSTEM_PYTHON} and a 3.11 grader whose packages it can share"
    if not _reachable_by_others(SITE):
        return f"needs {SITE} reachable by other uids (torch is shared from there)"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


def leak_attempt(root: Path) -> str:
    """A submission that lists the hidden tests and reads one, and says what it got in a visible test."""
    hidden = root / "source" / "tests" / "hidden"
    return (f"import glob\nFOUND = sorted(glob.glob('{hidden}/*.py'))\n"
            "def attention_scores(*args, **kwargs):\n"
            "    try:\n"
            f"        text = open('{hidden}/test_sdpa.py').read()\n"
            "    except OSError as error:\n"
            "        text = type(error).__name__\n"
            "    raise RuntimeError(f'LISTED {len(FOUND)} READ ' + text[:2000])\n")


@pytest.fixture(scope="module")
def autograder():
    """/autograder as Gradescope unpacks the bundle, in a folder other uids can enter, with the venv setup.sh
    makes (python3.11 -m venv; its packages shared from this grader's, torch included)."""
    base = Path(tempfile.mkdtemp(prefix="least-privilege-", dir="/tmp"))
    base.chmod(0o755)
    root = base / "autograder"
    with zipfile.ZipFile(gradescope.build(base / "dist")) as archive:
        archive.extractall(root / "source")
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(root / "source" / ".venv")], check=True)
    venv_site = next((root / "source" / ".venv" / "lib").glob("python3*/site-packages"))
    (venv_site / "shared-packages.pth").write_text(f"{SITE}\n")
    yield root
    shutil.rmtree(base, ignore_errors=True)


def setup_lock(root: Path) -> None:
    """setup.sh's last line, run by the bundle's venv from the bundle."""
    subprocess.run([str(root / "source/.venv/bin/python"), "-m", "grader.sandbox.exposure"], cwd=root / "source",
                   check=True, capture_output=True, timeout=300)


def run_autograder(root: Path, source: str) -> tuple[subprocess.CompletedProcess, dict]:
    """run_autograder as root without CAP_SYS_ADMIN: (the process, its results.json, checked against the schema)."""
    shutil.rmtree(root / "submission", ignore_errors=True)
    (root / "submission").mkdir()
    (root / "submission" / "attention.py").write_text(source)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("GRADER_", "PYTEST_", "PYTHON"))}
    env.update(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=str(root / "source/.venv/bin/python"))
    done = subprocess.run([*NO_SYS_ADMIN, "bash", str(root / "source/run_autograder")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, SCHEMA)
    return done, results


def outputs(results: dict) -> str:
    return results["output"] + "".join(test["output"] for test in results["tests"])


@pytest.fixture(scope="module")
def leak(autograder):
    setup_lock(autograder)
    return run_autograder(autograder, leak_attempt(autograder))


def test_without_sys_admin_the_uid_level_is_in_force(leak):
    done, _ = leak
    assert done.stdout.splitlines()[0] == "isolation: " + sandbox.DESCRIPTIONS["uid"], done.stdout + done.stderr


def test_at_the_uid_level_student_code_can_neither_list_nor_read_the_hidden_tests(leak, autograder):
    """Two walls: the scan refuses the file (glob and open are not the lab's), and behind it the kernel: a
    process with a worker's uid can list no folder and read no file of the tests (what the file would have
    done, as grader.sandbox.exposure probes it)."""
    done, results = leak
    assert done.returncode == 0, done.stderr[-2000:]
    shown = outputs(results)
    assert "does not allow" in shown
    hidden_text = (REPO / "tests/hidden/test_sdpa.py").read_text()
    assert hidden_text.splitlines()[0] not in shown and "def test_" not in shown
    probe = subprocess.run([str(autograder / "source/.venv/bin/python"), "-c",
                            "import sys; from pathlib import Path; from grader.sandbox.exposure import "
                            "readable_by_workers; print(repr(readable_by_workers([Path(sys.argv[1])])))",
                            str(autograder / "source/tests")], cwd=autograder / "source", capture_output=True,
                           text=True, timeout=120)
    assert probe.returncode == 0 and probe.stdout.strip() == "''", probe.stdout + probe.stderr[-2000:]


def test_at_the_uid_level_the_reference_keeps_full_marks(autograder):
    setup_lock(autograder)
    done, results = run_autograder(autograder, (REPO / "solutions/attention.py").read_text())
    assert done.returncode == 0, done.stderr[-2000:]
    assert results["score"] == 120.0 and all(test["status"] == "passed" for test in results["tests"])


def test_at_the_uid_level_gradescope_run_refuses_tests_other_uids_can_read(autograder):
    setup_lock(autograder)
    (autograder / "source" / "tests").chmod(0o755)
    try:
        done, results = run_autograder(autograder, (REPO / "solutions/attention.py").read_text())
    finally:
        setup_lock(autograder)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert "can read" in last and str(autograder / "source" / "tests") in last and "chmod -R go-rwx" in last
    assert results["score"] == 0 and "could not grade this submission" in results["output"]


def test_an_interpreter_other_uids_cannot_reach_still_leaves_results_and_exits_2(autograder):
    setup_lock(autograder)
    venv = autograder / "source" / ".venv"
    venv.chmod(0o700)
    try:
        done, results = run_autograder(autograder, (REPO / "solutions/attention.py").read_text())
    finally:
        venv.chmod(0o755)
    assert done.returncode == 2
    assert results["score"] == 0 and "SandboxUnavailable" in results["output"]


# -- the two halves, on their own ----------------------------------------------------------------------------

def test_lock_closes_the_source_but_for_grader_the_venv_and_the_way_to_them(tmp_path):
    for relative in ("grader/sandbox/boot.py", ".venv/bin/python", "tests/hidden/test_x.py", "setup.sh"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("x")
    (tmp_path / "grader/sandbox/boot.py").chmod(0o600)  # as a umask of 077 would leave it
    closed = exposure.lock(tmp_path, keep=[tmp_path / "grader", tmp_path / ".venv"])

    def mode(relative):
        return stat.S_IMODE((tmp_path / relative).stat().st_mode)

    assert sorted(closed) == [tmp_path / "setup.sh", tmp_path / "tests"]
    assert mode(".") & 0o077 == 0o011  # entered, not listed
    assert mode("tests") & 0o077 == 0 and mode("setup.sh") & 0o077 == 0
    assert mode("grader/sandbox/boot.py") & 0o004 and mode("grader/sandbox") & 0o005 == 0o005


def test_a_worker_uid_is_found_to_read_a_file_in_a_folder_it_can_enter_but_not_list():
    folder = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        folder.chmod(0o711)
        (folder / "secret.py").write_text("x")
        (folder / "secret.py").chmod(0o644)
        assert exposure.readable_by_workers([folder]) == str(folder / "secret.py")
        (folder / "secret.py").chmod(0o600)
        assert exposure.readable_by_workers([folder]) == ""
    finally:
        shutil.rmtree(folder)


def test_batch_at_the_uid_level_refuses_tests_other_uids_can_read(tmp_path, monkeypatch):
    from instructor.batch import run_batch

    tests = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        tests.chmod(0o755)
        (tests / "test_x.py").write_text("x")
        (tests / "test_x.py").chmod(0o644)
        monkeypatch.setitem(sandbox._LEVEL, "level", "uid")
        with pytest.raises(sandbox.SandboxUnavailable, match=f"can read {tests}"):
            run_batch(tmp_path, tests_dir=tests, no_sandbox=True, output=tmp_path / "grades.csv", progress=False)
    finally:
        shutil.rmtree(tests)
