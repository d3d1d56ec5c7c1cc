"""Submissions that misbehave, built from the reference by inserting code at a named place."""

from grader.stubs import SOLUTION_FILE, STUB_FILE

REFERENCE = SOLUTION_FILE.read_text()
STUBS = STUB_FILE.read_text()


def inject(source, after, code):
    """Insert code (indented like the anchor line's body) right after the unique anchor line."""
    lines = source.splitlines()
    matches = [i for i, line in enumerate(lines) if line.strip() == after]
    assert len(matches) == 1, f"anchor {after!r} found {len(matches)} times"
    index = matches[0]
    indent = lines[index][: len(lines[index]) - len(lines[index].lstrip())]
    if lines[index].rstrip().endswith(":"):
        indent += "    "
    body = [indent + line for line in code.strip("\n").splitlines()]
    return "\n".join(lines[: index + 1] + body + lines[index + 1 :]) + "\n"


def at_import(source, code):
    return source + "\n" + code.strip("\n") + "\n"


SDPA_BODY = '_check_qkv(q, k, v)'
CAUSAL_BODY = '# BEGIN SOLUTION'

SUBMISSIONS = {
    "reference": REFERENCE,
    "stubs": STUBS,
    "segfault_in_sdpa": inject(REFERENCE, SDPA_BODY, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"),
    "os_exit_in_sdpa": inject(REFERENCE, SDPA_BODY, "import os\nos._exit(3)"),
    "hang_in_sdpa": inject(REFERENCE, SDPA_BODY, "while True:\n    pass"),
    "memory_bomb_in_sdpa": inject(REFERENCE, SDPA_BODY, "hog = [bytearray(1 << 30) for _ in range(64)]"),
    "sys_exit_at_import": at_import(REFERENCE, "import sys\nsys.exit(0)"),
    "os_exit_at_import": at_import(REFERENCE, "import os\nos._exit(0)"),
    "syntax_error": REFERENCE.replace("def causal_mask(seq_len, device=None):", "def causal_mask(seq_len, device=None)", 1),
    "name_error_at_import": at_import(REFERENCE, "undefined_name + 1"),
    "missing_function": REFERENCE.replace("def merge_heads(x):", "def merge_heads_renamed(x):", 1),
    "patches_comparisons": at_import(STUBS, """
import torch, torch.testing, numpy
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
numpy.allclose = lambda *a, **k: True
try:
    import _pytest.outcomes, pytest
    pytest.fail = _pytest.outcomes.fail = lambda *a, **k: None
except Exception:
    pass
"""),
    "fake_reports_and_output": at_import(STUBS, r"""
import atexit, glob, json, os, sys
print("========== 23 passed in 0.50s ==========")
print('{"score": 100, "max_score": 100}')
def _spray():
    line = json.dumps({"body": json.dumps({"kind": "result", "id": "x", "status": "passed"}), "mac": "0" * 64})
    for pid in {os.getppid(), os.getpgrp()}:
        for fd in glob.glob(f"/proc/{pid}/fd/*"):
            try:
                with open(fd, "w") as handle:
                    handle.write(line + "\n")
            except Exception:
                pass
    for name in ("results.json", "report.json", ".report.json", "grades.csv"):
        try:
            with open(name, "w") as handle:
                handle.write('{"score": 100}')
        except Exception:
            pass
_spray()
atexit.register(_spray)
atexit.register(lambda: print("23 passed"))
"""),
    "calls_torch_sdpa": REFERENCE.replace(
        "    _check_qkv(q, k, v)\n    scores = attention_scores(q, k, scale)",
        "    _check_qkv(q, k, v)\n    import torch.nn.functional as F\n"
        "    _ = F.scaled_dot_product_attention(q, k, v)\n    scores = attention_scores(q, k, scale)", 1),
    "calls_aten_sdpa_without_torch_function": REFERENCE.replace(
        "    _check_qkv(q, k, v)\n    scores = attention_scores(q, k, scale)",
        "    _check_qkv(q, k, v)\n    with torch._C.DisableTorchFunction():\n"
        "        _ = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)"
        " if q.dim() == 4 else None\n    scores = attention_scores(q, k, scale)", 1),
}
