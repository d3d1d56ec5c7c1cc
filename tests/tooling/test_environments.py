"""The environment matrix: unusual machines and settings grade a submission exactly, or end in a grader error
(exit 2) that says what failed and blames no student. Never a 0 for correct code.

A setting here acts on how the grader starts pytest and the worker, not on which tests run: each case grades
a copy of the grader whose suite is one public test file (tests/tooling/small_checkout.py), so that the
matrix costs a few seconds a case. A case grades one submission that passes some of those tests and fails
another (SMALL_MIXED): its exact score shows both a pass and a fail kept under the setting, in one cold start
of pytest and the worker instead of one for the reference and one for the stubs. The whole suites are graded
exactly by test_gradescope.py (the reference and the stubs, cold) and `make mutants`."""

import csv
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader.paths import REPO
from grader.sandbox import isolation as sandbox
from tests.tooling.small_checkout import SMALL_FULL, SMALL_MIXED, SMALL_ZERO, mixed_submission, small_checkout

pytestmark = pytest.mark.skipif(sandbox.level() != "namespaces", reason="needs root and namespaces (CI has both)")

FULL, ZERO = SMALL_FULL, SMALL_ZERO
REAL_UNSHARE = shutil.which("unshare") or "/usr/bin/unshare"
FAILING = "echo 'unshare: sigprocmask unblock failed: Invalid argument' >&2; exit 1"


def fake_unshare(folder: Path, body: str) -> Path:
    """A folder holding an `unshare` that runs body (a shell script) and otherwise the real one."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "unshare"
    script.write_text(f"#!/bin/sh\n{body}\nexec {REAL_UNSHARE} \"$@\"\n")
    script.chmod(0o755)
    return folder


def class_folder(root: Path) -> Path:
    """root/ada (the reference) and root/bob (the stubs)."""
    for name, source in (("ada", REPO / "solutions"), ("bob", REPO / "assignment")):
        (root / name).mkdir(parents=True, exist_ok=True)
        shutil.copy(source / "attention.py", root / name / "attention.py")
    return root


def mixed_folder(root: Path) -> Path:
    """root/cy holding mixed_submission(), which earns SMALL_MIXED points of the small suite."""
    (root / "cy").mkdir(parents=True, exist_ok=True)
    (root / "cy" / "attention.py").write_text(mixed_submission())
    return root


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The grader with the small suite, and instructor/ for batch (grader/ and tests/ never change in a test)."""
    return small_checkout(tmp_path_factory.mktemp("checkout") / "lab03", instructor=True)


@pytest.fixture
def small_suite(checkout, monkeypatch) -> Path:
    """This process's grader grades the small suite where no tests folder is given (batch, grade())."""
    import grader.run

    monkeypatch.setattr(grader.run, "TESTS", checkout / "tests")
    return checkout / "tests"


def grade(impl: str | Path, env: dict, repo: Path, cwd: Path | None = None, wrapper: tuple[str, ...] = (),
          extra: tuple[str, ...] = ()) -> tuple[int, float | None, str]:
    """(exit status, score or None, stderr) of `python -m grader grade` on impl's public suite, with the
    grader of the checkout at repo (run from it, unless cwd says otherwise)."""
    out = Path(env.get("TMPDIR") or "/tmp").parent / f"report-{os.getpid()}.json"
    argv = [*wrapper, sys.executable, "-m", "grader", "grade", "--impl", str(impl), "--suite", "public",
            "--format", "json", "--output", str(out), "--exit-zero", *extra]
    done = subprocess.run(argv, cwd=cwd or repo, env={**env, "PYTHONPATH": str(repo)}, capture_output=True,
                          text=True, timeout=600)
    score = json.loads(out.read_text())["score"] if done.returncode == 0 and out.is_file() else None
    out.unlink(missing_ok=True)
    return done.returncode, score, done.stderr


def base_env(**changes: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADER_", "PYTEST_"))}
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def assert_exact(root: Path, env: dict, repo: Path, **options) -> None:
    """The mixed submission of mixed_folder(root) earns exactly SMALL_MIXED under env."""
    code, score, stderr = grade(root / "cy", env, repo, **options)
    assert (code, score) == (0, SMALL_MIXED), f"exit {code}, score {score}\n{stderr[-2000:]}"


def test_tmpdir_inside_the_submission_folder_grades_exactly(tmp_path, checkout):
    root = mixed_folder(tmp_path / "class")
    assert_exact(root, base_env(TMPDIR=str(root / "cy")), checkout)


def test_tmpdir_is_the_class_folder_and_grades_exactly(tmp_path, checkout):
    root = mixed_folder(tmp_path / "class")
    assert_exact(root, base_env(TMPDIR=str(root)), checkout)


def test_a_batch_with_tmpdir_at_the_class_folder_leaves_no_folder_the_next_batch_takes_for_a_student(
        tmp_path, checkout):
    root = class_folder(tmp_path / "class")
    argv = [sys.executable, "-m", "instructor", "batch", str(root), "--suite", "all",
            "--output", str(tmp_path / "grades.csv")]
    done = subprocess.run(argv, cwd=checkout, env={**base_env(TMPDIR=str(root)), "PYTHONPATH": str(checkout)},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(path.name for path in root.iterdir()) == ["ada", "bob"]


def test_tmpdir_with_a_space_and_non_ascii_letters_grades_exactly(tmp_path, checkout):
    tmpdir = tmp_path / "job dir é"
    tmpdir.mkdir(mode=0o700)
    assert_exact(mixed_folder(tmp_path / "class ü"), base_env(TMPDIR=str(tmpdir)), checkout)


def test_home_unset_and_lang_c_grade_exactly(tmp_path, checkout):
    assert_exact(mixed_folder(tmp_path / "class"), base_env(HOME=None, LANG="C", LC_ALL="C"), checkout)


def test_a_relative_impl_from_another_working_directory_grades_exactly(tmp_path, checkout):
    mixed_folder(tmp_path / "class")
    code, score, stderr = grade(Path("class") / "cy", base_env(), checkout, cwd=tmp_path)
    assert (code, score) == (0, SMALL_MIXED), stderr[-2000:]


def test_unshare_missing_from_path_grades_exactly_at_a_weaker_level(tmp_path, checkout):
    empty = tmp_path / "bin"
    empty.mkdir()
    assert_exact(mixed_folder(tmp_path / "class"), base_env(PATH=str(empty)), checkout)


def test_no_cgroup_access_grades_exactly(tmp_path, checkout):
    wrapper = (REAL_UNSHARE, "--mount", "--propagation", "private", "sh", "-c",
               'mount -t tmpfs none /sys/fs/cgroup && exec "$@"', "sh")
    assert_exact(mixed_folder(tmp_path / "class"), base_env(), checkout, wrapper=wrapper)


def test_a_read_only_checkout_grades_exactly(tmp_path, checkout):
    wrapper = (REAL_UNSHARE, "--mount", "--propagation", "private", "sh", "-c",
               f'mount --bind "{checkout}" "{checkout}" && mount -o remount,bind,ro "{checkout}" && exec "$@"', "sh")
    assert_exact(mixed_folder(tmp_path / "class"), base_env(), checkout, wrapper=wrapper)


def test_a_checkout_at_a_path_with_a_space_grades_exactly(tmp_path):
    checkout = small_checkout(tmp_path / "course repo")
    assert_exact(mixed_folder(tmp_path / "class"), base_env(), checkout)


def test_a_pytest_configuration_and_conftest_above_the_checkout_change_nothing(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\npython_functions = check_*\nfilterwarnings = error\n")
    (tmp_path / "conftest.py").write_text("import pytest\n\n@pytest.fixture(autouse=True)\ndef broken():\n"
                                          "    raise RuntimeError('a parent folder conftest ran')\n")
    checkout = small_checkout(tmp_path / "course" / "lab03")
    assert_exact(mixed_folder(tmp_path / "class"), base_env(), checkout)


def test_a_umask_of_077_grades_exactly(tmp_path, checkout):
    """A hardened machine's umask does not make the sandbox's folders unreadable to the worker's uid."""
    assert_exact(mixed_folder(tmp_path / "class"), base_env(), checkout,
                 wrapper=("sh", "-c", 'umask 077; exec "$@"', "sh"))


def test_hard_limits_lower_than_the_graders_grade_exactly(tmp_path, checkout):
    """A login node's hard ulimits (files, CPU time) are kept, never raised: grading goes on within them."""
    wrapper = ("sh", "-c", 'ulimit -n 128 && ulimit -t 600 && exec "$@"', "sh")
    assert_exact(mixed_folder(tmp_path / "class"), base_env(), checkout, wrapper=wrapper)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare")
def test_root_in_a_user_namespace_without_the_workers_uids_grades_exactly(tmp_path, checkout):
    """Root that maps only itself (unshare --user --map-root-user) cannot give workers their uids: the grader
    sandboxes as an unprivileged user does, or not at all, and still grades exactly."""
    wrapper = (REAL_UNSHARE, "--user", "--map-root-user")
    assert_exact(mixed_folder(tmp_path / "class"), base_env(), checkout, wrapper=wrapper)


# The `unshare` program starts the worker at the user-namespace level, and a worker started again after a crash at
# every level; the first worker of a grade at the namespaces level is the twin's, which makes its namespaces itself
# (grader.sandbox.twin). The two tests below take the user-namespace level, where the program is the only way, as
# the user's setting: the level is decided without a probe, and every `unshare` after that fails or hangs.
UNSHARES = "user-namespace"


def test_unshare_failing_after_the_probe_is_a_grader_error_that_blames_no_student(tmp_path, checkout):
    bin_dir = fake_unshare(tmp_path / "bin", FAILING)
    env = base_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", GRADER_SANDBOX=UNSHARES)
    code, score, stderr = grade(class_folder(tmp_path / "class") / "ada", env, checkout)
    assert code == 2 and score is None
    assert "grader error (not your code's fault)" in stderr and "sandbox" in stderr
    assert "your code" not in stderr.replace("not your code's fault", "")


def test_unshare_hanging_after_the_probe_is_a_grader_error_not_a_timeout_of_the_students(tmp_path, checkout):
    bin_dir = fake_unshare(tmp_path / "bin", "exec sleep 600")
    env = base_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", GRADER_SANDBOX=UNSHARES)
    code, score, stderr = grade(class_folder(tmp_path / "class") / "ada", env, checkout, extra=("--timeout", "30"))
    assert code == 2 and score is None
    assert "grader error (not your code's fault)" in stderr and "nothing of the student's ran" in stderr


@pytest.mark.skipif(sandbox.level() not in ("namespaces", "uid", "user-namespace"), reason="needs a sandbox")
def test_grading_files_changed_by_someone_else_during_a_run_are_a_grader_error_not_tampering(tmp_path, monkeypatch,
                                                                                            small_suite):
    """With a sandbox the student's code cannot write the checkout: a change seen during the run (a git pull,
    an editor) is the grader's problem, and no student is flagged for it."""
    from grader import run
    from grader.grade import grade as grade_in_process

    readings = iter(["before", "after"])
    monkeypatch.setattr(run, "fingerprint", lambda tests_dir: next(readings))
    with pytest.raises(run.GraderError, match="someone changed the checkout"):
        grade_in_process(class_folder(tmp_path / "class") / "ada", "public", tests_dir=small_suite)


FINE_TEST = ("import pytest\n\npytestmark = pytest.mark.task('scores')\n\n@pytest.mark.points(1)\n"
             "def test_a():\n    pass\n")


def suite_of(root: Path, files: dict[str, str]) -> Path:
    """root/tests: the grader's conftest and a public suite of files."""
    (root / "tests" / "public").mkdir(parents=True)
    shutil.copy(REPO / "tests" / "conftest.py", root / "tests" / "conftest.py")
    for name, text in files.items():
        (root / "tests" / "public" / name).write_text(text)
    return root / "tests"


def test_a_test_process_that_dies_before_listing_its_tests_is_a_grader_error(tmp_path):
    """pytest lists the tests before the worker imports attention.py: a death before that is the grader's."""
    from grader.run import GraderError, run_pytest

    tests = suite_of(tmp_path, {"test_fine.py": FINE_TEST, "test_dies.py": "import os\nos._exit(3)\n"})
    with pytest.raises(GraderError, match="before it listed the tests"):
        run_pytest(class_folder(tmp_path / "class") / "ada" / "attention.py", "public", tests_dir=tests)


def test_a_suite_that_no_longer_imports_is_a_grader_error_not_every_test_failed(tmp_path):
    """One test module that fails to import stops pytest before any test: the student's code never ran."""
    from grader.run import GraderError, run_pytest

    tests = suite_of(tmp_path, {"test_fine.py": FINE_TEST, "test_broken.py": "import torch.utils._no_such_module\n"})
    with pytest.raises(GraderError, match="ran no test to its end"):
        run_pytest(class_folder(tmp_path / "class") / "ada" / "attention.py", "public", tests_dir=tests)


KILLED_TEST = ("import os, signal, pytest\n\npytestmark = pytest.mark.task('scores')\n\n@pytest.mark.points(1)\n"
               "def test_z():\n    os.kill(os.getpid(), signal.SIGKILL)\n")


def test_a_test_process_killed_from_outside_after_some_results_is_a_grader_error_not_a_crash(tmp_path):
    """The out-of-memory killer or an operator ends pytest mid-run: the student's code, in its sandbox, cannot
    reach that process, so the tests without a result are the grader's failure, not a crash of theirs."""
    from grader.run import GraderError, run_pytest

    tests = suite_of(tmp_path, {"test_fine.py": FINE_TEST, "test_killed.py": KILLED_TEST})
    with pytest.raises(GraderError, match="ended before it reported 1 of 2 tests"):
        run_pytest(class_folder(tmp_path / "class") / "ada" / "attention.py", "public", tests_dir=tests)


BATCH_FAULT = textwrap.dedent("""
    case "$*" in *broken*) {failing};; esac
""")


def test_a_batch_whose_sandbox_fails_for_some_students_marks_them_not_graded_and_regrades_them(tmp_path, monkeypatch,
                                                                                               small_suite):
    import instructor.warm
    from instructor.cli import main

    root = tmp_path / "class"
    for index in range(6):  # a reference and a stub among the broken, and two of each among the rest
        name = f"s{index}-broken" if index % 3 == 2 else f"s{index}"
        source = REPO / ("solutions" if index % 2 == 0 else "assignment") / "attention.py"
        (root / name).mkdir(parents=True)
        shutil.copy(source, root / name / "attention.py")
    bin_dir = fake_unshare(tmp_path / "bin", BATCH_FAULT.format(failing=FAILING))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(instructor.warm, "zygote_available", lambda: False)  # each worker starts with unshare
    output = tmp_path / "grades.csv"
    assert main(["batch", str(root), "--suite", "public", "--output", str(output)]) != 0
    rows = gradebook(output)
    assert stat.S_IMODE(output.stat().st_mode) == 0o600  # what batch writes is the staff's alone
    assert stat.S_IMODE((tmp_path / "grades-reports").stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "grades-reports").iterdir()} == {0o600}
    broken = {name for name in rows if "broken" in name}
    assert len(broken) == 2 and all(rows[name]["total"] == "not graded" for name in broken)
    assert all("sandbox" in rows[name]["flags"] for name in broken)
    for name in set(rows) - broken:
        expected = FULL if int(name[1]) % 2 == 0 else ZERO
        assert (float(rows[name]["total"]), float(rows[name]["max_score"])) == (expected, FULL)
    monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])
    assert main(["batch", str(root), "--suite", "public", "--output", str(output), "--only-failed"]) == 0
    regraded = gradebook(output)
    assert set(regraded) == set(rows) and all(row["total"] != "not graded" for row in regraded.values())
    assert all(regraded[name] == rows[name] for name in set(rows) - broken)
    assert all(float(regraded[name]["total"]) == (FULL if int(name[1]) % 2 == 0 else ZERO) for name in broken)


def test_a_grader_error_that_does_not_recur_costs_the_student_nothing(tmp_path, small_suite):
    """batch grades a student once more after a grader error: a transient fault (a loaded host) leaves no
    'not graded' row behind."""
    from grader.launch import PLAIN
    from grader.run import GraderError
    from instructor.batch import grade_folder

    class FailsOnce:
        worker_before_pytest = False
        failed = False

        def start_pytest(self, *args):
            if not self.failed:
                self.failed = True
                raise GraderError("the sandbox did not start")
            return PLAIN.start_pytest(*args)

        def start_worker(self, *args):
            return PLAIN.start_worker(*args)

    shutil.copy(REPO / "solutions" / "attention.py", tmp_path / "attention.py")
    launcher = FailsOnce()
    report = grade_folder(tmp_path, "public", 300, tests_dir=small_suite, launcher=launcher)
    assert launcher.failed and report.failure is None
    assert report.score == report.max_score == FULL


def test_a_folder_name_that_is_not_utf8_gets_an_escaped_row_and_the_whole_gradebook(tmp_path):
    """Folder names unzipped as Latin-1 bytes: every row is written, the name's bad byte as \\xNN."""
    from instructor.batch import error_report, write_gradebook

    reports = {name: error_report(name, "public", "not graded in this test") for name in ("lat\udce9n", "zoe")}
    write_gradebook(reports, tmp_path / "grades.csv")
    assert set(gradebook(tmp_path / "grades.csv")) == {"lat\\xe9n", "zoe"}


def test_a_folder_name_too_long_for_a_report_file_still_gets_its_row_and_a_report(tmp_path):
    from instructor.batch import _write_results, error_report

    long_name = "\u5b66" * 84  # 252 bytes in UTF-8: a legal folder name, too long with ".json" added
    reports = {name: error_report(name, "public", "not graded in this test") for name in (long_name, "zoe")}
    (tmp_path / "reports").mkdir()
    _write_results(reports, tmp_path / "reports", tmp_path / "grades.csv", roster=None, keep=False, checkouts={},
                   quiet=True)
    assert set(gradebook(tmp_path / "grades.csv")) == {long_name, "zoe"}
    written = sorted(path.name for path in (tmp_path / "reports").iterdir())
    assert len(written) == 2 and "zoe.json" in written
    assert all(len(name.encode()) < 255 for name in written)


def test_an_archive_tools_folder_is_not_a_student(tmp_path):
    from instructor.batch import submissions

    for name in ("__MACOSX", "ada", ".git"):
        (tmp_path / name).mkdir()
    assert [path.name for path in submissions(tmp_path)] == ["ada"]


def test_a_failure_of_the_graders_own_code_exits_2_not_1(tmp_path, checkout):
    """1 means points lost; a grader that cannot write its report says so with 2 and 'grader error'."""
    (tmp_path / "a-file").write_text("")
    done = subprocess.run([sys.executable, "-m", "grader", "grade", "--impl", str(REPO / "solutions"), "--suite",
                           "public", "--output", str(tmp_path / "a-file" / "report.json")], cwd=checkout,
                          env={**base_env(), "PYTHONPATH": str(checkout)}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "grader error" in done.stderr.splitlines()[-1]


def test_a_submission_named_through_a_symbolic_link_grades_exactly(tmp_path, checkout):
    """`grade --impl LINK` grades the folder LINK names (links inside a submission stay refused)."""
    (tmp_path / "link").symlink_to(mixed_folder(tmp_path / "class") / "cy")
    assert grade(tmp_path / "link", base_env(), checkout)[:2] == (0, SMALL_MIXED)


def gradebook(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def test_the_gradescope_runner_grades_exactly_with_its_root_under_tmpdir(tmp_path, monkeypatch, small_suite):
    import tempfile

    from grader.gradescope import run

    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copy(REPO / "solutions" / "attention.py", root / "submission" / "attention.py")
    monkeypatch.setenv("TMPDIR", str(root))
    monkeypatch.setattr(tempfile, "tempdir", None)
    results = json.loads(run(root).read_text())
    assert results["score"] == FULL  # the whole suites' 100 and bonus 20: tests/tooling/test_gradescope.py
    assert all(test["status"] == "passed" for test in results["tests"])


def test_the_grading_process_starts_a_worker_only_where_no_other_students_run_is_in_its_reach(
        tmp_path, small_suite, monkeypatch):
    """docs/grading.md: `grade` (PLAIN) starts one new Python that forks the worker and becomes the pytest child
    (the twin start); batch's launcher starts it only from its zygote, whose workers are no children of batch's
    process, and without one leaves the start to each pytest child: no worker is a child of the process that holds
    every student's pipes."""
    import grader.launch
    from grader.grade import grade as grade_in_process
    from grader.launch import PLAIN
    from grader.run import child_env
    from instructor.gradebook import grade_folder
    from instructor.warm import WarmLauncher, pair

    shutil.copy(REPO / "solutions" / "attention.py", tmp_path / "attention.py")
    here: list[str] = []  # the workers started as children of this process (grader.sandbox.spawn)
    spawn_worker = grader.launch.spawn_worker
    monkeypatch.setattr(grader.launch, "spawn_worker", lambda *args, **kwargs: here.append("plain")
                        or spawn_worker(*args, **kwargs))
    spawn_twin = grader.launch.spawn_twin
    monkeypatch.setattr(grader.launch, "spawn_twin", lambda *args, **kwargs: here.append("twin")
                        or spawn_twin(*args, **kwargs))
    assert grade_in_process(tmp_path, "public", tests_dir=small_suite, launcher=PLAIN).score == FULL
    assert here == ["twin"]
    assert grade_folder(tmp_path, "public", 300, tests_dir=small_suite, launcher=WarmLauncher()).score == FULL
    assert here == ["twin"]  # batch without a zygote: the pytest child started it
    zygote, prefork = pair.start([], child_env())
    with prefork, zygote:
        forked: list[str] = []
        zygote_spawn = zygote.spawn
        monkeypatch.setattr(zygote, "spawn", lambda *args: forked.append("zygote") or zygote_spawn(*args))
        assert grade_folder(tmp_path, "public", 300, tests_dir=small_suite, launcher=WarmLauncher(zygote)).score == FULL
    assert (here, forked) == (["twin"], ["zygote"])


def test_the_pytest_child_starts_its_worker_at_the_level_handed_over_not_one_it_finds(
        tmp_path, small_suite, monkeypatch):
    """The grader checks the level once and hands it over (GRADER_HANDOVER_LEVEL): a pytest child that starts the
    worker itself does so at that level, though probing would find a stronger one here (namespaces: its own uid)."""
    from grader.grade import grade as grade_in_process
    from grader.launch import PLAIN_BATCH
    from grader.paths import Env

    monkeypatch.delenv(Env.SANDBOX, raising=False)
    monkeypatch.setitem(sandbox._LEVEL, "level", "user-namespace")  # what this grader checked
    (tmp_path / "attention.py").write_text("import os\n\n\ndef attention_scores(*args, **kwargs):\n"
                                           "    raise ValueError(f'worker uid {os.getuid()}')\n")
    report = grade_in_process(tmp_path, "public", tests_dir=small_suite, launcher=PLAIN_BATCH,
                              syntax_scan=lambda source: [])
    messages = [test.message or "" for test in report.tests]
    assert any("worker uid 0" in message for message in messages), messages  # user-namespace: our uid, mapped
