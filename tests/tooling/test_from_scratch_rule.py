"""The from-scratch rule: torch's own attention (any alias, its kernels, its modules, torch.ao's) earns no points,
whether it is called out of the guard's sight (a thread, the guard's modes popped), behind the lab's names, or
through numpy; honest code that masks or wraps its own softmax gains nothing over the reference."""

import pytest

from grader.capabilities import scan
from grader.report import FlagKind
from grader.sandbox import isolation as sandbox
from tests.tooling.conftest import same_at_every_level
from tests.tooling.misbehaving import REFERENCE, at_import, grade_submission, redteam_submission

needs_namespaces = pytest.mark.skipif(sandbox.level() != "namespaces", reason="needs root and namespaces (CI has both)")
UNTOUCHED_TASKS = ("scores", "causal_mask", "softmax_weights", "heads", "divisibility")

AO_MULTIHEAD = at_import(REFERENCE, '''
import torch.ao.nn.quantizable as _quantizable
def _forward(self, query, key=None, value=None, mask=None, is_causal=False):
    key = query if key is None else key
    value = key if value is None else value
    torch_mha = _quantizable.MultiheadAttention(self.d_model, self.n_heads, batch_first=True)
    return _quantizable.MultiheadAttention.forward(torch_mha, query, key, value, attn_mask=mask)
MultiHeadAttention.forward = _forward
''')

AO_SUBCLASS = at_import(REFERENCE, '''
import torch.ao.nn.quantizable as _quantizable
class _Theirs(_quantizable.MultiheadAttention):
    def forward(self, query, key, value, **kwargs):
        return super().forward(query, key, value, **kwargs)
def _forward(self, query, key=None, value=None, mask=None, is_causal=False):
    key = query if key is None else key
    value = key if value is None else value
    return _Theirs(self.d_model, self.n_heads, batch_first=True)(query, key, value, attn_mask=mask)
MultiHeadAttention.forward = _forward
''')


def full(report, task_ids):
    return all(report.tasks[task].score == report.tasks[task].max_score for task in task_ids)


@same_at_every_level
@pytest.mark.parametrize("name", ["sdpa_in_a_thread", "sdpa_with_modes_popped"])
def test_torch_attention_out_of_the_guards_sight_is_still_caught(attacked_class, name):
    report = attacked_class[name]
    assert report.tasks["sdpa"].score == 0
    assert any(flag.kind in (FlagKind.FROM_SCRATCH, FlagKind.SANDBOX) for flag in report.flags), report.flags
    assert full(report, UNTOUCHED_TASKS)


@same_at_every_level
def test_a_numpy_round_trip_fails_with_a_message_naming_it(attacked_class):
    report = attacked_class["numpy_round_trip"]
    assert report.tasks["sdpa"].score == 0
    messages = [test.message for test in report.tests if test.task == "sdpa"]
    assert all("torch tensor operations" in message for message in messages)


@needs_namespaces
@pytest.mark.parametrize("source", [AO_MULTIHEAD, AO_SUBCLASS], ids=["forward-called-directly", "subclass"])
def test_torch_ao_multihead_attention_is_torchs_own_attention(tmp_path, source):
    """The scan refuses torch.ao first today (a route below torch's public API): this is the guard behind it."""
    assert scan(source)
    report = grade_submission(tmp_path, "ao", source, behind_the_scan=True)
    assert report.tasks["mha"].score == 0
    assert FlagKind.FROM_SCRATCH in {flag.kind for flag in report.flags}


@needs_namespaces
def test_torch_ao_quantizable_attention_behind_the_labs_names_earns_no_mha_points(tmp_path):
    assert scan(redteam_submission("quantizable_mha"))  # first wall today; the guard's below
    report = grade_submission(tmp_path, "quantizable_mha", redteam_submission("quantizable_mha"), "all",
                              behind_the_scan=True)
    assert report.tasks["mha"].score == 0
    assert any(flag.kind is FlagKind.FROM_SCRATCH for flag in report.flags)


@needs_namespaces
def test_a_dunder_set_on_a_module_by_a_key_is_refused_behind_the_scan(tmp_path):
    """The scan refuses nn.ParameterDict (its keys become attribute names); behind it, the guard refuses any dunder
    outside the lab's list set on a module, which is how copy.copy would call a module's own __reduce_ex__."""
    source = redteam_submission("module_dunder_by_a_key")
    assert "ParameterDict" in str(scan(source))
    report = grade_submission(tmp_path, "module_dunder", source, behind_the_scan=True, tasks=("scores",))
    assert report.score == 0
    assert any("setting the attribute __reduce_ex__ of a module" in (test.message or "") for test in report.tests)


@needs_namespaces
def test_a_dataclass_field_renamed_to_code_is_refused(tmp_path):
    """dataclasses execs source holding each field's name: the guard refuses a Field named other than by a plain
    name, however the Field was reached (here from a plain class body, which the scan lets through)."""
    report = grade_submission(tmp_path, "field_name", redteam_submission("dataclass_field_from_a_plain_class"),
                              tasks=("scores",))
    messages = " ".join(test.message or "" for test in report.tests)
    assert report.score == 0 and "ATTACK RAN" not in messages, messages[:500]
    assert "naming a dataclass field other than by a plain name" in messages


@needs_namespaces
def test_masked_softmax_gains_nothing_over_the_reference(tmp_path):
    assert grade_submission(tmp_path, "masked_softmax", redteam_submission("masked_softmax"), "all").score < 100


@needs_namespaces
def test_the_guard_knows_every_attention_module_torch_defines():
    """A new torch that adds an attention module in a package not imported by `import torch` would be missed
    by the guard's scan: import torch.nn's and torch.ao.nn's every submodule and compare."""
    import importlib
    import pkgutil
    import subprocess
    import sys

    import torch

    for package in (torch.nn, torch.ao.nn):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            try:
                importlib.import_module(info.name)
            except Exception:
                continue
    from grader.sandbox.guard import forbidden_modules

    everything = {f"{cls.__module__}.{cls.__qualname__}" for cls in forbidden_modules()}
    probe = "import torch; from grader.sandbox.guard import forbidden_modules as t; " \
            "print('\\n'.join(f'{c.__module__}.{c.__qualname__}' for c in t()))"
    at_install = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                    check=True).stdout.split())
    assert "torch.nn.modules.activation.MultiheadAttention" in at_install
    assert everything <= at_install, f"attention modules the guard would miss: {sorted(everything - at_install)}"
