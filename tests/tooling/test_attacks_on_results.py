"""A submission cannot write its own results: not the results file (a process left behind, the Gradescope
runner's results.json), not the reply its graded call sends back (computed while it is sent, or rewritten
while it is pickled)."""

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from grader.capabilities import scan
from grader.sandbox import isolation as sandbox
from instructor import gradescope
from tests.tooling.conftest import tamper_environment
from tests.tooling.misbehaving import ATTACKS, TAMPERING, grade_submission, redteam_submission

needs_namespaces = pytest.mark.skipif(sandbox.level() != "namespaces", reason="needs root and namespaces (CI has both)")
ROOT_ONLY = pytest.mark.skipif(sandbox.level() not in sandbox.TRUSTED,
                               reason="gradescope-run needs a trusted level (Gradescope runs as root)")


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


@pytest.mark.each_level
def test_no_process_outlives_its_run_and_results_stay_as_written(attacked_class):
    assert attacked_class["daemon_rewrites_results"].score == 0
    assert (attacked_class.root / "results.json").read_text() == "the grader's results"
    assert sandbox_processes(attacked_class.root) == []


@ROOT_ONLY
@pytest.mark.parametrize("name", ["reads_and_signals_other_processes", "daemon_rewrites_results"])
def test_the_gradescope_runner_holds_too(tmp_path, monkeypatch, name):
    tamper_environment(monkeypatch, tmp_path)
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


@needs_namespaces
def test_a_result_that_computes_while_it_is_sent_earns_nothing(tmp_path):
    """The worker reads a returned tuple subclass through tuple's own iterator: what was stored is sent, and
    no code of the student's runs after the graded call."""
    report = grade_submission(tmp_path, "lazy_tuple", redteam_submission("lazy_tuple"), "public")
    assert report.tasks["sdpa"].score == 0 and not scan(redteam_submission("lazy_tuple"))


@needs_namespaces
def test_a_mode_left_on_torchs_stack_is_refused_in_every_call(tmp_path):
    """A mode entered at import saw the grader's own pickling of each result, outside the metered call, and
    wrote the answers in then. A mode of the student's outside a call is refused; the scan refuses the file
    first today (torch.overrides is not one of the lab's modules), and this is the wall behind it."""
    assert scan(redteam_submission("lazy_encode"))
    report = grade_submission(tmp_path, "lazy_encode", redteam_submission("lazy_encode"), "all", behind_the_scan=True)
    assert report.score == 0 and report.bonus_score == 0
    assert "stays on torch's stack outside the graded call" in report.tests[0].message


@needs_namespaces
def test_a_mode_entered_and_left_inside_the_call_and_the_default_device_keep_full_marks(tmp_path):
    """The worker tolerates what honest use of torch's modes leaves behind (the scan refuses torch.overrides
    today: this is the worker's side)."""
    report = grade_submission(tmp_path, "balanced_mode", redteam_submission("balanced_mode"), "all",
                              behind_the_scan=True)
    assert report.score == 100 and report.bonus_score == 20 and not report.flags


def test_a_worker_reply_of_the_wrong_shape_fails_the_students_tests_not_the_grader(tmp_path):
    """The worker runs the student's code, so its replies are checked before the test process reads them: an
    error reply whose fields have other types (redteam/error_reply_types.py replaces the worker's
    describe()) stopped pytest inside a hook, and the run ended as the grader's error, blaming the machine."""
    from grader.grade import grade
    from tests.tooling.small_checkout import small_tests

    source = redteam_submission("error_reply_types")
    assert scan(source.encode())  # the scan refuses it first (Storage.type of a variable)
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "attention.py").write_text(source)
    # one test file: each malformed reply costs a new worker
    report = grade(tmp_path / "student", "public", tests_dir=small_tests(tmp_path / "tests"),
                   syntax_scan=lambda source: [])
    assert any("malformed reply" in (test.message or "") for test in report.tests)  # a report, not exit 2


GOOD_ERROR = {"type": "ValueError", "bases": ["ValueError", "Exception"], "submission_classes": [], "message": "m",
              "line": 3, "code": "x = 1", "traceback": ""}


@pytest.mark.parametrize("op, reply, well_formed", [
    ("call", {"ok": True, "stats": {}, "value": 1}, True),
    ("call", {"ok": True, "value": 1}, False),  # no stats: the meters would read nothing
    ("grad", {"ok": True, "stats": []}, False),
    ("getattr", {"ok": True, "value": 1}, True),
    ("call", {"ok": False, "error": GOOD_ERROR}, True),
    ("call", {"ok": False, "error": {**GOOD_ERROR, "line": True}}, False),  # a bool is no line number
    ("call", {"ok": False, "error": {**GOOD_ERROR, "bases": ["ValueError", 1]}}, False),
    ("hello", {"ok": True, "exceptions": {"Oops": ["ValueError"]}, "import_error": None}, True),
    ("hello", {"ok": True, "exceptions": {"Oops": "ValueError"}, "import_error": None}, False),
    ("hello", {"ok": True, "exceptions": {}, "import_error": {"type": "SyntaxError"}}, False),
    ("call", {"ok": 1, "stats": {}}, False),
    ("call", ["ok"], False),
])
def test_each_reply_is_checked_against_its_operations_shape_before_it_is_read(op, reply, well_formed):
    from grader.sandbox import wire

    assert wire.well_formed_reply(op, reply) is well_formed
