"""One submission per class of attack on the grader (tests/tooling/misbehaving.py, TAMPERING), graded as a
class with honest classmates beside them, then again one by one, and through the Gradescope runner."""

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from grader.grade import grade
from grader.paths import REPO
from grader.report import FlagKind, Status
from grader.sandbox import isolation as sandbox
from instructor import gradescope
from instructor.batch import BATCH_LEVELS, run_batch
from tests.tooling.misbehaving import HIDING_FROM_THE_COUNTER, PERSIST_PROBES, REFERENCE, STUBS, TAMPERING

pytestmark = pytest.mark.skipif(sandbox.level() == "none", reason="needs a sandbox (CI runs this as root, and at the "
                                "uid and user-namespace levels through tests/tooling/at_level.py)")
ROOT_ONLY = pytest.mark.skipif(sandbox.level() not in sandbox.TRUSTED,
                               reason="gradescope-run needs a trusted level (Gradescope runs as root)")

HONEST = {"honest_reference": REFERENCE, "honest_reference_too": REFERENCE, "honest_stubs": STUBS}
UNTOUCHED_TASKS = ("scores", "causal_mask", "softmax_weights", "heads", "divisibility")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("tamper")
    patch = pytest.MonkeyPatch()
    patch.setenv("GRADER_CALL_TIMEOUT", "2")
    patch.setenv("GRADER_WORKER_MEMORY_MB", "512")
    patch.setenv("TAMPER_SCOPE", str(root / "class"))
    patch.setenv("TAMPER_TARGET", str(root / "results.json"))
    (root / "results.json").write_text("the grader's results")
    yield root
    patch.undo()


def write_class(root):
    for name, files in TAMPERING.items():
        for relative, text in files.items():
            (root / name / relative).parent.mkdir(parents=True, exist_ok=True)
            (root / name / relative).write_text(text)
    for name, text in {**HONEST, **HIDING_FROM_THE_COUNTER}.items():
        (root / name).mkdir()
        (root / name / "attention.py").write_text(text)
    (root / "symlink_to_classmate").mkdir()
    (root / "symlink_to_classmate" / "attention.py").symlink_to(root / "honest_reference" / "attention.py")


@pytest.fixture(scope="module")
def graded(env):
    """The class graded by batch with the syntax scan set aside (grader.capabilities, tested on its own in
    test_capabilities and test_redteam): each attack meets the sandbox and the guard as if it got past the
    scan, so these tests hold the inner layers to account."""
    root = env / "class"
    root.mkdir()
    write_class(root)
    # batch takes the namespaces and user-namespace levels (make sandbox-user) as they are; a weaker one only
    # when accepted explicitly, as --no-sandbox does
    accept = sandbox.level() not in BATCH_LEVELS
    reports = run_batch(root, suite="public", jobs=2, output=env / "grades.csv", progress=False, timeout=300,
                        no_sandbox=accept, syntax_scan=lambda source: [])
    time.sleep(4)  # longer than the daemon attack waits before it writes
    return reports


def sandbox_processes(scope):
    """Processes started for a submission under scope (their command line names it), after grading ended."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                if str(scope).encode() in (entry / "cmdline").read_bytes():
                    found.append(entry.name)
        except OSError:
            pass
    return found


def full(report, task_ids):
    return all(report.tasks[task].score == report.tasks[task].max_score for task in task_ids)


@pytest.mark.parametrize("name", ["honest_reference", "honest_reference_too"])
def test_honest_classmates_keep_full_marks_and_no_flag(graded, name):
    assert graded[name].score == graded[name].max_score > 0
    assert graded[name].flags == []


def test_honest_stubs_keep_zero_and_no_flag(graded):
    assert graded["honest_stubs"].score == 0
    assert graded["honest_stubs"].flags == []


@pytest.mark.parametrize("name", ["honest_reference", "honest_stubs"])
def test_a_regrade_alone_gives_the_same_result(graded, env, name):
    alone = grade(env / "class" / name, "public")
    assert alone.score == graded[name].score and alone.flags == graded[name].flags
    assert [(t.id, t.status) for t in alone.tests] == [(t.id, t.status) for t in graded[name].tests]


@pytest.mark.parametrize("name", ["grader_folder_beside", "helper_module_beside"])
def test_files_beside_attention_py_are_not_importable(graded, name):
    report = graded[name]
    assert report.score == 0
    assert all("import" in test.message for test in report.tests)


@pytest.mark.parametrize("name", ["sdpa_in_a_thread", "sdpa_with_modes_popped"])
def test_torch_attention_out_of_the_guards_sight_is_still_caught(graded, name):
    report = graded[name]
    assert report.tasks["sdpa"].score == 0
    assert any(flag.kind in (FlagKind.FROM_SCRATCH, FlagKind.SANDBOX) for flag in report.flags), report.flags
    assert full(report, UNTOUCHED_TASKS)


HIDDEN_LOOPS = [name for name in HIDING_FROM_THE_COUNTER if name.startswith("looped_sdpa")]


def counter_messages(report, task):
    return [test.message for test in report.tests if test.task == task and not test.passed]


def says_the_counter_was_dodged(message):
    return "the grader refused it" in message and ("dispatch" in message or "operation counter" in message)


@pytest.mark.parametrize("name", HIDDEN_LOOPS)
def test_a_loop_hidden_from_the_operation_counter_earns_no_efficiency_points(graded, name):
    report = graded[name]
    assert report.tasks["efficiency"].score == 0
    messages = counter_messages(report, "efficiency")
    assert messages and all(says_the_counter_was_dodged(message) for message in messages), messages
    assert any(flag.kind is FlagKind.SANDBOX for flag in report.flags), report.flags
    assert full(report, UNTOUCHED_TASKS)


def test_a_full_matrix_hidden_from_the_memory_meter_earns_no_tiled_points(graded):
    report = graded["full_matrix_tiled_python_key_excluded"]
    assert report.tasks["tiled"].score == 0
    messages = counter_messages(report, "tiled")
    assert messages and all(says_the_counter_was_dodged(message) for message in messages), messages
    assert full(report, (*UNTOUCHED_TASKS, "sdpa", "mha", "efficiency"))


def test_a_numpy_round_trip_fails_with_a_message_naming_it(graded):
    report = graded["numpy_round_trip"]
    assert report.tasks["sdpa"].score == 0
    messages = [test.message for test in report.tests if test.task == "sdpa"]
    assert all("torch tensor operations" in message for message in messages)


def test_reading_or_signalling_other_processes_changes_nothing(graded):
    assert graded["reads_and_signals_other_processes"].score == 0


def test_nothing_persists_into_later_runs(graded):
    site = Path(subprocess.check_output([sys.executable, "-c", "import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))"], text=True).strip())
    for path in (site / PERSIST_PROBES[0], REPO / "grader" / "__pycache__" / PERSIST_PROBES[1], REPO / "tests" / PERSIST_PROBES[2]):
        assert not path.exists(), path
    assert graded["persists_into_later_runs"].score == 0


def test_no_process_outlives_its_run_and_results_stay_as_written(graded, env):
    assert graded["daemon_rewrites_results"].score == 0
    assert (env / "results.json").read_text() == "the grader's results"
    assert sandbox_processes(env) == []


@pytest.mark.parametrize("name", ["memory_tree", "huge_output"])
def test_resource_attacks_cost_only_their_own_task(graded, name):
    report = graded[name]
    assert report.tasks["sdpa"].score == 0
    assert full(report, UNTOUCHED_TASKS)


def test_a_symlink_to_a_classmates_file_is_refused(graded):
    report = graded["symlink_to_classmate"]
    assert report.score == 0
    assert report.flags[0].kind is FlagKind.REFUSED


def test_grade_alone_refuses_a_forged_grader_package(env, tmp_path):
    for relative, text in TAMPERING["grader_folder_beside"].items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    report = grade(tmp_path, "public")
    assert report.score == 0 and all(test.status is Status.ERROR for test in report.tests)


def test_a_classmates_file_cannot_be_read(graded):
    assert graded["reads_a_classmates_file"].score == 0


@ROOT_ONLY
@pytest.mark.parametrize("name", ["reads_and_signals_other_processes", "daemon_rewrites_results"])
def test_the_gradescope_runner_holds_too(env, tmp_path, name):
    root = tmp_path / "autograder"
    with zipfile.ZipFile(gradescope.build(tmp_path / "dist")) as archive:
        archive.extractall(root / "source")
    (root / "submission").mkdir()
    (root / "submission" / "attention.py").write_text(TAMPERING[name]["attention.py"])
    run_env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable,
                   TAMPER_TARGET=str(root / "results" / "results.json"), TAMPER_SCOPE=str(root))
    subprocess.run(["bash", str(root / "source" / "run_autograder")], cwd=root, env=run_env, check=True,
                   capture_output=True, timeout=600)
    written = (root / "results" / "results.json").read_text()
    time.sleep(4)
    assert (root / "results" / "results.json").read_text() == written
    assert json.loads(written)["score"] == 0
    assert sandbox_processes(root) == []
