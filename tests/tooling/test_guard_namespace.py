"""The guard's second wall: what it installs where student code can reach it (torch's functions, methods,
hooks) hands out, through __globals__ and closures, neither the guard's module, nor any module, nor
__import__. Checked in a child: install() changes torch for the whole process."""

import subprocess
import sys

from grader.paths import REPO

CHECK = r'''
import types, _thread, torch
import torch.nn.functional as F
from grader.sandbox import guard

guard.install()


def namespaces(function, seen):
    if not isinstance(function, types.FunctionType) or id(function) in seen:
        return []
    seen.add(id(function))
    found = [function.__globals__]
    for value in [*function.__globals__.values(), *(cell.cell_contents for cell in function.__closure__ or ())]:
        found += namespaces(value, seen)
    return found


installed = [torch.Tensor.tolist, torch.tensor, torch.as_tensor, torch.frombuffer, torch.Tensor.numpy,
             torch.from_numpy, F.multi_head_attention_forward, torch.nn.MultiheadAttention.forward,
             _thread.start_new_thread]
for function in installed:
    for namespace in namespaces(function, set()):
        assert namespace is not vars(guard), function.__qualname__
        assert not any(isinstance(value, types.ModuleType) for value in namespace.values()), function.__qualname__
        assert "__import__" not in namespace["__builtins__"], function.__qualname__
assert torch.zeros(2).tolist() == [0.0, 0.0]
print("ok")
'''


def test_nothing_the_guard_installs_hands_out_a_module_or_its_namespace():
    result = subprocess.run([sys.executable, "-c", CHECK], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]
