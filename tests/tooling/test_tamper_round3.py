"""Round 3's attacks (issue 21), one test per row: each earns at most what right-shaped zeros earn.

The file-system rows (the checkout's .git, a classmate's folder, a previous run's reports) are attacked by one
walker that searches every readable file for attention code and runs what it finds; the guard's rows by
submissions that reach torch's attention, Python loops, foreign memory and C calls by new routes."""

import textwrap
from pathlib import Path

import pytest

from grader.grade import grade
from grader.report import FlagKind
from grader.sandbox import isolation as sandbox
from instructor.batch import run_batch
from tests.tooling.misbehaving import REFERENCE, STUBS, at_import

pytestmark = pytest.mark.skipif(sandbox.level() != "namespaces", reason="needs root and namespaces (CI has both)")

WALKER = at_import(STUBS, '''
import html as _html, os as _os, re as _re, zlib as _zlib
_FOUND = []
def _texts(path):
    with open(path, "rb") as handle:
        data = handle.read(2_000_000)
    if "/.git/objects/" in path:
        try:
            data = _zlib.decompress(data)
        except Exception:
            pass
    text = data.decode(errors="replace")
    yield text
    for block in _re.findall(r"<pre>(.*?)</pre>", text, _re.S):
        yield _html.unescape(block)
for _root, _dirs, _files in _os.walk("/"):
    if _root.startswith(("/proc", "/sys", "/dev")):
        _dirs[:] = []
        continue
    for _name in _files:
        _path = _os.path.join(_root, _name)
        if _path == __file__ or "site-packages" in _path or "/lib/python3" in _path:
            continue
        try:
            for _text in _texts(_path):
                if "def scaled_dot_product_attention" in _text and "weights @ v" in _text:
                    _FOUND.append(_path)
                    exec(compile(_text[_text.index("import"):], _path, "exec"), globals())
        except Exception:
            continue
''')

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

PYTHON_LOOPS = at_import(REFERENCE, '''
import math as _math
def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    _check_qkv(q, k, v)
    weights = attention_weights(attention_scores(q, k, scale), mask) if not is_causal else None
    if weights is None:
        scores = attention_scores(q, k, scale)
        allowed = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        weights = attention_weights(scores.masked_fill(~allowed, float("-inf")), mask)
    rows, values = weights.reshape(-1, weights.shape[-2], weights.shape[-1]).tolist(), \\
        v.reshape(-1, v.shape[-2], v.shape[-1]).tolist()
    out = [[[sum(w * vv[j][c] for j, w in enumerate(row)) for c in range(len(vv[0]) if vv else 0)]
            for row in mat] for mat, vv in zip(rows, values)]
    output = torch.tensor(out, dtype=q.dtype).reshape(*q.shape[:-1], v.shape[-1])
    return output, weights
''')

FILLED_BUFFER = at_import(REFERENCE, '''
_BUFFER = torch.empty(16 * 1024 * 1024)
def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    q_len, k_len = q.size(-2), k.size(-2)
    scores = _BUFFER[: q.shape[:-1].numel() * k_len].view(*q.shape[:-1], k_len)
    for start in range(0, q_len, block_size):
        rows = slice(start, start + block_size)
        torch.sum(q[..., rows, None, :] * k[..., None, :, :], dim=-1, out=scores[..., rows, :])
    scores.mul_(scale)
    if is_causal:
        for start in range(0, q_len, block_size):
            piece = scores[..., start:start + block_size, :]
            cols = torch.arange(k_len)
            piece.masked_fill_(cols > torch.arange(start, start + piece.size(-2)).unsqueeze(-1), float("-inf"))
    return attention_weights(scores, mask) @ v
''')

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


def grade_one(tmp_path: Path, name: str, source: str, suite: str = "public"):
    (tmp_path / name).mkdir(parents=True, exist_ok=True)
    (tmp_path / name / "attention.py").write_text(source)
    return grade(tmp_path / name, suite)


def flag_kinds(report) -> set[FlagKind]:
    return {flag.kind for flag in report.flags}


def test_the_walker_alone_finds_no_reference_in_the_checkout_or_its_git(tmp_path):
    report = grade_one(tmp_path, "walker", WALKER, suite="all")
    assert report.score == 0 and not report.bonus_score


def test_the_walker_finds_no_classmate_nor_last_runs_reports_in_a_batch(tmp_path):
    root = tmp_path / "class"
    for name, source in (("walker", WALKER), ("ada", REFERENCE), ("bob", REFERENCE)):
        (root / name).mkdir(parents=True)
        (root / name / "attention.py").write_text(source)
    output = tmp_path / "grades.csv"
    for _ in range(2):  # the second run could read the first one's reports and similarity page
        reports = run_batch(root, suite="public", jobs=2, output=output, progress=False, similarity=True)
        assert reports["walker"].score == 0
        assert reports["ada"].full_marks and reports["bob"].full_marks


@pytest.mark.parametrize("source", [AO_MULTIHEAD, AO_SUBCLASS], ids=["forward-called-directly", "subclass"])
def test_torch_ao_multihead_attention_is_torchs_own_attention(tmp_path, source):
    report = grade_one(tmp_path, "ao", source)
    assert report.tasks["mha"].score == 0
    assert FlagKind.FROM_SCRATCH in flag_kinds(report)


def test_python_loops_over_tolist_floats_earn_no_efficiency_points(tmp_path):
    report = grade_one(tmp_path, "loops", PYTHON_LOOPS)
    assert report.tasks["sdpa"].score > 0  # the values are right (but for an edge case of the attack's own)
    assert report.tasks["efficiency"].score == 0


def test_a_full_score_matrix_filled_into_a_buffer_by_slices_earns_no_tiled_memory_point(tmp_path):
    report = grade_one(tmp_path, "buffer", FILLED_BUFFER)
    memory = [t for t in report.tests if t.name == "test_tiled_never_creates_a_tq_by_tk_matrix"]
    assert memory and memory[0].score == 0
    assert report.tasks["tiled"].score < report.tasks["tiled"].max_score


def test_torch_frombuffer_is_refused(tmp_path):
    source = at_import(REFERENCE, "_shared = torch.frombuffer(bytearray(1024), dtype=torch.float32)")
    report = grade_one(tmp_path, "frombuffer", source)
    assert report.score == 0


def test_a_file_that_imports_ctypes_is_refused_before_it_runs(tmp_path):
    report = grade_one(tmp_path, "ccall", C_CALL)
    assert report.score == 0 and report.flags[0].kind is FlagKind.REFUSED


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


def test_an_oversized_attention_py_is_refused_at_once_with_its_size(tmp_path):
    source = REFERENCE + "\n" + "# padding\n" * 400_000
    report = grade_one(tmp_path, "huge", source)
    assert report.score == 0 and FlagKind.REFUSED in flag_kinds(report)
    assert "MB" in report.tests[0].message


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
    from grader.sandbox.guard import torch_attention_modules

    everything = {f"{cls.__module__}.{cls.__qualname__}" for cls in torch_attention_modules()}
    probe = "import torch; from grader.sandbox.guard import torch_attention_modules as t; " \
            "print('\\n'.join(f'{c.__module__}.{c.__qualname__}' for c in t()))"
    at_install = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                    check=True).stdout.split())
    assert "torch.nn.modules.activation.MultiheadAttention" in at_install
    assert everything <= at_install, f"attention modules the guard would miss: {sorted(everything - at_install)}"
