"""The Gradescope bundle, run in a folder that mimics /autograder on four kinds of submission."""

import json
import os
import subprocess
import sys
import zipfile

import jsonschema
import pytest

from grader.paths import REPO
from grader.tasks import TASKS
from instructor import gradescope
from instructor.stubs import SOLUTION_FILE, STUB_FILE

SCHEMA_FILE = REPO / "tests/schemas/gradescope-results.schema.json"  # Gradescope's results.json contract


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return gradescope.build(tmp_path_factory.mktemp("dist"))


def run_autograder(bundle, tmp_path, submission_files, **env_vars):
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    os.chmod(root / "source/run_autograder", 0o755)
    for relative, text in submission_files.items():
        (root / "submission" / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / relative).write_text(text)
    (root / "submission").mkdir(exist_ok=True)
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable, **env_vars)
    subprocess.run(["bash", str(root / "source/run_autograder")], cwd=root, env=env, check=True,
                   capture_output=True, timeout=600)
    results = json.loads((root / "results/results.json").read_text())
    jsonschema.validate(results, json.loads(SCHEMA_FILE.read_text()))
    return results


def test_scripts_sit_at_the_zip_root_and_are_executable(bundle):
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        assert {"setup.sh", "run_autograder"} <= set(names)
        assert archive.getinfo("run_autograder").external_attr >> 16 & 0o111
    assert any(name.startswith("tests/hidden/") for name in names)
    assert not any(name.startswith(("solutions/", "tests/mutants/")) for name in names)


def test_setup_installs_cpu_torch():
    setup = (REPO / "instructor/platform/setup.sh").read_text()
    assert "download.pytorch.org/whl/cpu" in setup and "torch==2.13.0" in setup


def test_correct_submission_scores_100_plus_its_bonus(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, {"attention.py": SOLUTION_FILE.read_text()})
    bonus = sum(task.points for task in TASKS if task.bonus)
    assert results["score"] == 100 + bonus
    assert results["extra_data"]["max_score"] == 100
    hidden = [test for test in results["tests"] if "hidden" in test["tags"]]
    assert hidden and {test["visibility"] for test in hidden} == {"after_published"}


def test_submission_in_a_subfolder_is_found(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, {"lab03/src/attention.py": SOLUTION_FILE.read_text()})
    assert results["score"] >= 100


def test_stub_submission_scores_0(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, {"attention.py": STUB_FILE.read_text()})
    assert results["score"] == 0
    assert all(test["status"] == "failed" for test in results["tests"])


def test_missing_file_says_what_was_submitted(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, {"attention_v2.py": "x = 1\n"})
    assert results["score"] == 0
    assert "attention_v2.py" in results["tests"][0]["output"] and "attention.py" in results["tests"][0]["output"]


def test_crashing_submission_scores_0_with_the_reason(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, {"attention.py": "import sys\nsys.exit(3)\n"})
    assert results["score"] == 0
    assert "sys.exit(3)" in results["tests"][0]["output"]


HANG_AT_IMPORT = "import torch\nwhile True:\n    pass\n"


def test_a_hang_at_import_is_waited_for_once_and_fails_every_test(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, {"attention.py": HANG_AT_IMPORT}, GRADER_IMPORT_TIMEOUT="3")
    assert results["score"] == 0
    assert all("importing attention.py did not finish within 3 s" in test["output"] for test in results["tests"])
    assert results["execution_time"] < 60, "one 3 s wait, not one per test"


def test_a_run_past_its_budget_still_writes_results_with_every_test_failed(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, {"attention.py": HANG_AT_IMPORT}, GRADER_RUN_BUDGET="10")
    assert results["score"] == 0 and len(results["tests"]) > 1
    assert all(test["status"] == "failed" and "time limit" in test["output"] for test in results["tests"])


def graded(task, suite, passed, name, message=""):
    from grader.report import Status, TestResult

    return TestResult(id=f"tests/{suite}/t.py::{name}", name=name, task=task, suite=suite,
                      status=Status.PASSED if passed else Status.FAILED, message=message,
                      score=2.0 if passed else 0.0, max_score=2.0, doc=f"checks {name}")


@pytest.mark.parametrize("visibility", ["hidden", "after_due_date", "after_published"])
def test_the_always_visible_output_shows_nothing_of_a_hidden_test(visibility):
    from grader.formats import gradescope as format_
    from grader.report import make_report

    tests = [graded("sdpa", "public", True, "test_public_ok"),
             graded("sdpa", "hidden", False, "test_secret_shape", "q[2, 3, 5, 12] differs: 0.125 expected")]
    results = json.loads(format_.render(make_report(tests, [], "public+hidden", "x"), hidden_visibility=visibility))
    assert results["visibility"] == "visible"
    for secret in ("test_secret_shape", "q[2, 3, 5, 12]", "checks test_secret_shape", "hidden 0 of 2"):
        assert secret not in results["output"]
    hidden = [test for test in results["tests"] if "hidden" in test["tags"]]
    assert [test["visibility"] for test in hidden] == [visibility]


def test_with_hidden_tests_visible_the_output_is_the_whole_summary():
    from grader.formats import gradescope as format_
    from grader.report import make_report

    tests = [graded("sdpa", "public", True, "test_public_ok"), graded("sdpa", "hidden", False, "test_secret_shape")]
    results = json.loads(format_.render(make_report(tests, [], "public+hidden", "x"), hidden_visibility="visible"))
    assert "test_secret_shape" in results["output"]


def test_a_run_budget_that_is_not_a_number_still_leaves_gradescope_a_results_file(tmp_path, monkeypatch):
    from grader import gradescope as entry
    from grader.sandbox.policy import SettingError

    monkeypatch.setenv("GRADER_RUN_BUDGET", "abc")
    with pytest.raises(SettingError, match="GRADER_RUN_BUDGET='abc'"):
        entry.run(tmp_path)
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["score"] == 0 and "GRADER_RUN_BUDGET" in results["output"]


# -- whatever fails, Gradescope gets a valid results.json and the grader's failure exits 2 ----------------------

def gradescope_run(root, monkeypatch) -> int:
    """`python -m grader gradescope-run --root root` in this process, through the same entry as the command."""
    from grader import entry

    monkeypatch.setattr(sys, "argv", ["grader", "gradescope-run", "--root", str(root)])
    with pytest.raises(SystemExit) as exited:
        entry.run("grader.cli", "grader error")
    return exited.value.code


def failure_results(root) -> dict:
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, json.loads(SCHEMA_FILE.read_text()))
    assert results["score"] == 0 and "could not grade this submission" in results["output"]
    return results


def test_a_machine_without_a_trusted_sandbox_still_writes_results_and_exits_2(tmp_path, monkeypatch):
    from grader.sandbox import isolation

    monkeypatch.setitem(isolation._LEVEL, "level", "none")
    assert gradescope_run(tmp_path, monkeypatch) == 2
    assert "SandboxUnavailable" in failure_results(tmp_path)["output"]


def test_a_setting_that_cannot_grade_still_writes_results_and_exits_2(tmp_path, monkeypatch):
    from grader.sandbox import isolation

    monkeypatch.setitem(isolation._LEVEL, "level", "namespaces")
    monkeypatch.setenv("GRADER_CALL_TIMEOUT", "abc")
    assert gradescope_run(tmp_path, monkeypatch) == 2
    assert "GRADER_CALL_TIMEOUT='abc'" in failure_results(tmp_path)["output"]


@pytest.mark.parametrize("error", [RuntimeError("the sandbox for the student's code did not start"),
                                   ZeroDivisionError("a bug of the grader's own")])
def test_a_grader_failure_while_grading_still_writes_results_and_exits_2(tmp_path, monkeypatch, error):
    from grader.sandbox import isolation

    def failing_grade(*args, **kwargs):
        raise error

    monkeypatch.setitem(isolation._LEVEL, "level", "namespaces")
    monkeypatch.setattr("grader.grade.grade", failing_grade)
    assert gradescope_run(tmp_path, monkeypatch) == 2
    assert str(error) in failure_results(tmp_path)["output"]


def test_a_failure_before_grading_starts_still_writes_results_and_exits_2(tmp_path, monkeypatch):
    def failing_describe():
        raise OSError("no /proc to read the isolation from")

    monkeypatch.setattr("grader.sandbox.isolation.describe", failing_describe)
    assert gradescope_run(tmp_path, monkeypatch) == 2
    assert "no /proc" in failure_results(tmp_path)["output"]


def test_an_interpreter_that_does_not_start_still_leaves_results_and_exits_2(bundle, tmp_path):
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=str(tmp_path / "no-python"))
    done = subprocess.run(["bash", str(root / "source/run_autograder")], cwd=root, env=env, capture_output=True,
                          timeout=60)
    assert done.returncode == 2
    failure_results(root)
