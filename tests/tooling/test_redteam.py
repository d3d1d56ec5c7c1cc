"""A red team's attacks on the allow-list view and the guard, graded as a student would submit them: each earns
at most what its honest part earns without the attack. tests/tooling/redteam/ keeps each attack's own code; its
docstring says whether it is appended to the reference or to the stubs."""

import io
import json
import zipfile
from pathlib import Path

import pytest

from grader.capabilities import scan
from grader.grade import grade
from grader.report import FlagKind
from grader.sandbox import isolation as sandbox
from grader.sandbox import wire
from tests.tooling.misbehaving import REFERENCE, STUBS, at_import

ATTACKS = Path(__file__).parent / "redteam"
needs_namespaces = pytest.mark.skipif(sandbox.level() != "namespaces", reason="needs root and namespaces (CI has both)")


def submission(name: str) -> str:
    """The attack's attention.py: the reference or the stubs, with the attack's code appended."""
    attack = (ATTACKS / f"{name}.py").read_text()
    base = STUBS if "appended to the stubs" in attack.splitlines()[0] else REFERENCE
    return at_import(base, attack)


def graded(tmp_path: Path, name: str, suite: str = "all"):
    (tmp_path / name).mkdir()
    (tmp_path / name / "attention.py").write_text(submission(name))
    return grade(tmp_path / name, suite)


@needs_namespaces
@pytest.mark.parametrize("name", ["guard_neutralize", "meter_forge", "bomb_reply", "pickle_reply", "ctypes_fork",
                                  "route_probe"])
def test_an_attack_on_the_grader_inside_the_worker_is_refused_before_it_runs(tmp_path, name):
    report = graded(tmp_path, name, "public")
    assert report.score == 0 and report.flags[0].kind is FlagKind.REFUSED
    assert "does not allow" in report.tests[0].message


@needs_namespaces
@pytest.mark.parametrize("name", ["r4_export_hooks", "r4_getattr_modules", "r4_second_stage", "r4_mode_stack",
                                  "r4_fork_daemon"])
def test_round_four_attacks_on_the_guard_are_refused_before_they_run(tmp_path, name):
    """getattr(sys, "modules"), sys.path with a second file, torch's private mode stacks and weakref's registry,
    torch._utils in a __reduce__: each reaches the grader through a private or import-path name."""
    report = graded(tmp_path, name, "public")
    assert report.score == 0 and report.flags[0].kind is FlagKind.REFUSED


@needs_namespaces
def test_a_result_that_computes_while_it_is_sent_earns_nothing(tmp_path):
    """The worker reads a returned tuple subclass through tuple's own iterator: what was stored is sent, and
    no code of the student's runs after the graded call."""
    report = graded(tmp_path, "r4_lazy_tuple", "public")
    assert report.tasks["sdpa"].score == 0 and not scan(submission("r4_lazy_tuple"))


@needs_namespaces
def test_a_mode_left_on_torchs_stack_is_refused_in_every_call(tmp_path):
    """Round 5: a mode entered at import saw the grader's own pickling of each result, outside the metered
    call, and wrote the answers in then. A mode of the student's outside a call is now refused."""
    report = graded(tmp_path, "r5_lazy_encode")
    assert report.score == 0 and report.bonus_score == 0
    assert "stays on torch's stack outside the graded call" in report.tests[0].message


@needs_namespaces
def test_a_mode_entered_and_left_inside_the_call_and_the_default_device_keep_full_marks(tmp_path):
    report = graded(tmp_path, "r5_balanced_mode")
    assert report.score == 100 and report.bonus_score == 20 and not report.flags


@needs_namespaces
def test_python_loops_over_tolist_earn_what_plain_loops_earn(tmp_path):
    report = graded(tmp_path, "tolist_loops")
    assert report.tasks["efficiency"].score <= 1  # the loop control's efficiency: one shape-free test


@needs_namespaces
def test_torch_ao_quantizable_attention_behind_the_labs_names_earns_no_mha_points(tmp_path):
    report = graded(tmp_path, "quantizable_mha")
    assert report.tasks["mha"].score == 0
    assert any(flag.kind is FlagKind.FROM_SCRATCH for flag in report.flags)


@needs_namespaces
def test_masked_softmax_gains_nothing_over_the_reference(tmp_path):
    assert graded(tmp_path, "masked_softmax").score < 100


@needs_namespaces
def test_probing_the_file_system_earns_what_the_stubs_earn(tmp_path):
    assert graded(tmp_path, "fsprobe", "public").score == 0


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
    "if __name__ == '__main__':\n    pass", "class A:\n    def __call__(self):\n        return self.__class__",
    "import numpy as np", "import sys\nprint('x', file=sys.stderr)", "from typing import Optional",
    "if not hasattr(mha, '_cache'):\n    pass", "for name in ('w_q', 'w_k'):\n    getattr(self, name)",
])
def test_what_honest_code_uses_is_not_refused(construct):
    assert scan(construct) == [], construct


def test_a_compressed_frame_is_refused_before_it_is_unpacked():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", b"\0" * 1_000_000)
    with pytest.raises(wire.ProtocolError, match="compressed"):
        wire.decode(buffer.getvalue())


def test_a_frame_that_would_unpack_past_the_limit_is_refused():
    frame = wire.encode({"value": b"x" * 1000})
    with pytest.raises(wire.ProtocolError, match="more than 10 bytes"):
        wire.check_archive(frame, limit=10)


def test_a_string_past_the_limit_is_cut_where_the_message_is_read():
    message = wire.decode(wire.encode({"error": {"type": "E" * (wire.MAX_TEXT + 5), "bases": ["ValueError"]}}))
    assert len(message["error"]["type"]) < wire.MAX_TEXT + 50 and message["error"]["type"].endswith("5 characters cut)")


def test_a_message_whose_non_tensor_part_passes_its_limit_is_refused():
    with pytest.raises(wire.ProtocolError, match="besides its tensors"):
        wire.decode(wire.encode({"type": "E" * (wire.MAX_PICKLE + 1)}))


@needs_namespaces
def test_an_exception_with_a_giant_class_name_costs_its_tests_and_grows_no_report(tmp_path):
    report = graded(tmp_path, "r6_giant_type_name")
    assert report.score == report.max_score and report.bonus_score < report.bonus_max_score
    assert max(len(test.message) for test in report.tests) < 20_000
    assert len(json.dumps(report.pytest_json)) < 2_000_000


@pytest.fixture(scope="module")
def meter_games(tmp_path_factory):
    """{"games": tasks, "straight": tasks}: round 5's meter games, and the same code played straight."""
    root = tmp_path_factory.mktemp("meter_games")
    source = (ATTACKS / "r6_meter_games.py").read_text()
    tasks = {}
    for name, text in (("games", source), ("straight", source.replace("GAMES = True", "GAMES = False"))):
        (root / name).mkdir()
        (root / name / "attention.py").write_text(text)
        tasks[name] = grade(root / name, "all").tasks
    return tasks


@needs_namespaces
def test_meter_games_gain_nothing_where_the_meters_see_every_product(meter_games):
    """A decode step that re-projects the prefix through conv1d and expanded products is counted like the
    matmuls it replaces."""
    assert meter_games["games"]["kv_cache"].score <= meter_games["straight"]["kv_cache"].score


@needs_namespaces
@pytest.mark.xfail(strict=True, reason="open (docs/grading.md): an operation count padded to the same number at "
                                       "every shape, and a non-causal call inflated so that the causal one looks "
                                       "small, still pass the efficiency and tiled-skip tests")
def test_meter_games_gain_nothing_in_efficiency_and_tiled(meter_games):
    games, straight = meter_games["games"], meter_games["straight"]
    assert games["efficiency"].score <= straight["efficiency"].score
    assert games["tiled"].score <= straight["tiled"].score
