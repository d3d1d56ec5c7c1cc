"""A submission cannot reach the grader's own files and code: not by files of its own beside attention.py, not
by writing the checkout or the Python install for later runs, not through the grader's modules in the worker
(refused by the syntax scan before it runs: grader.capabilities), not by a C call, and the checkout (its .git
included) holds nothing it could copy."""

import subprocess
import sys
from pathlib import Path

import pytest

from grader.capabilities import scan
from grader.grade import grade
from grader.paths import REPO
from grader.report import FlagKind, Status
from grader.sandbox import isolation as sandbox
from tests.tooling.conftest import tamper_environment
from tests.tooling.misbehaving import (
    PERSIST_PROBES,
    REFERENCE,
    STUBS,
    TAMPERING,
    WALKER,
    at_import,
    grade_submission,
    redteam_submission,
)

needs_a_sandbox = pytest.mark.skipif(sandbox.level() == "none", reason="needs a sandbox")
needs_namespaces = pytest.mark.skipif(sandbox.level() != "namespaces", reason="needs root and namespaces (CI has both)")

C_CALL = at_import(REFERENCE, '''
import ctypes as _ctypes
C_CALL_RAN = []
try:
    _ctypes.pythonapi.Py_GetVersion.restype = _ctypes.c_char_p
    C_CALL_RAN.append(_ctypes.pythonapi.Py_GetVersion())
except Exception:
    pass
try:
    _address = _ctypes.cast(_ctypes.pythonapi.Py_GetVersion, _ctypes.c_void_p).value
    C_CALL_RAN.append(_ctypes.CFUNCTYPE(_ctypes.c_char_p)(_address)())
except Exception:
    pass
if C_CALL_RAN:
    raise SystemExit("a C function ran")
''')


@pytest.mark.each_level
@pytest.mark.parametrize("name", ["grader_folder_beside", "helper_module_beside"])
def test_files_beside_attention_py_are_not_importable(attacked_class, name):
    report = attacked_class[name]
    assert report.score == 0
    assert all("import" in test.message for test in report.tests)


@needs_a_sandbox
@pytest.mark.each_level
def test_grade_alone_refuses_a_forged_grader_package(tmp_path, monkeypatch):
    tamper_environment(monkeypatch, tmp_path)
    for relative, text in TAMPERING["grader_folder_beside"].items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    report = grade(tmp_path, "public")
    assert report.score == 0 and all(test.status is Status.ERROR for test in report.tests)


@pytest.mark.each_level
def test_nothing_persists_into_later_runs(attacked_class):
    site = Path(subprocess.check_output([sys.executable, "-c", "import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))"], text=True).strip())
    for path in (site / PERSIST_PROBES[0], REPO / "grader" / "__pycache__" / PERSIST_PROBES[1], REPO / "tests" / PERSIST_PROBES[2]):
        assert not path.exists(), path
    assert attacked_class["persists_into_later_runs"].score == 0


@needs_namespaces
def test_the_walker_alone_finds_no_reference_in_the_checkout_or_its_git(tmp_path):
    report = grade_submission(tmp_path, "walker", WALKER, suite="all")
    assert report.score == 0 and not report.bonus_score


@needs_namespaces
@pytest.mark.parametrize("name", ["guard_neutralize", "meter_forge", "bomb_reply", "pickle_reply", "ctypes_fork",
                                  "route_probe"])
def test_an_attack_on_the_grader_inside_the_worker_is_refused_before_it_runs(tmp_path, name):
    report = grade_submission(tmp_path, name, redteam_submission(name), "public")
    assert report.score == 0 and report.flags[0].kind is FlagKind.REFUSED
    assert "does not allow" in report.tests[0].message


@needs_namespaces
@pytest.mark.parametrize("name", ["export_hooks", "getattr_modules", "second_stage", "mode_stack", "fork_daemon"])
def test_attacks_through_private_or_import_path_names_are_refused_before_they_run(tmp_path, name):
    """getattr(sys, "modules"), sys.path with a second file, torch's private mode stacks and weakref's registry,
    torch._utils in a __reduce__: each reaches the grader through a private or import-path name."""
    report = grade_submission(tmp_path, name, redteam_submission(name), "public")
    assert report.score == 0 and report.flags[0].kind is FlagKind.REFUSED


@needs_namespaces
def test_probing_the_file_system_earns_what_the_stubs_earn(tmp_path):
    assert grade_submission(tmp_path, "fsprobe", redteam_submission("fsprobe"), "public").score == 0

def test_honest_files_reach_nothing_of_the_graders():
    assert scan(REFERENCE) == [] and scan(STUBS) == []


@pytest.mark.parametrize("construct", [
    "import grader.sandbox.guard", "import sys\nsys.modules['x']", "f.__globals__", "exec('1')", "eval('1')",
    "getattr(torch, name)", "getattr(f, '__code__')", "import gc", "import ctypes", "from importlib import util",
    "x = '{0.__globals__}'.format(f)", "vars(torch)['sys']", "torch.__dict__", "e.__traceback__.tb_frame.f_back",
    "torch.load(buffer)", "import operator", "type(x).__mro__", "object.__subclasses__()",
])
def test_each_route_to_the_graders_code_is_found(construct):
    assert scan(construct), construct


@pytest.mark.parametrize("construct", [
    "super().__init__()", "self.modules()", "getattr(self, 'w_q')", "import math\nimport torch.nn.functional as F",
    "if __name__ == '__main__':\n    pass", "class A:\n    def __call__(self):\n        return self.__class__.__name__",
    "import numpy as np", "import sys\nprint('x', file=sys.stderr)", "from typing import Optional",
    "if not hasattr(mha, '_cache'):\n    pass", "for name in ('w_q', 'w_k'):\n    getattr(self, name)",
])
def test_what_honest_code_uses_is_not_refused(construct):
    assert scan(construct) == [], construct


@needs_namespaces
def test_a_file_that_imports_ctypes_is_refused_before_it_runs(tmp_path):
    report = grade_submission(tmp_path, "ccall", C_CALL)
    assert report.score == 0 and report.flags[0].kind is FlagKind.REFUSED


@needs_namespaces
def test_no_c_function_runs_in_the_worker_even_past_the_scan(tmp_path):
    """The guard's own layer, below the syntax scan: the worker imports the file (which raises if a C call
    ran) and answers."""
    from grader.sandbox.proxy import Submission

    (tmp_path / "attention.py").write_text(C_CALL)
    submission = Submission(tmp_path / "attention.py")
    try:
        assert submission.causal_mask(2).tolist() == [[True, False], [True, True]]
    finally:
        submission.stop()
