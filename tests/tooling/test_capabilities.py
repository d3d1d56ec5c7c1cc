"""The syntax scan of attention.py (grader/capabilities.py): what reaches the grader's code is refused, and a
student's own names, in any style, are not."""

import pytest

from grader.capabilities import scan


def refused(source: str) -> bool:
    return bool(scan(source))


@pytest.mark.parametrize("source", [
    "import torch\nstack = torch.utils._python_dispatch._get_current_dispatch_mode_stack()\n",
    "import weakref\nfor f in weakref.finalize._registry: pass\n",
    "import torch\nC = torch._C\n",
    "from torch.utils._python_dispatch import TorchDispatchMode\n",
    "from torch.overrides import _get_current_function_mode_stack\n",
    "import torch._dynamo\n",
])
def test_a_private_name_reached_through_an_import_is_refused(source):
    assert refused(source)


@pytest.mark.parametrize("source", [
    "import sys\nguard = getattr(sys, 'modules')['grader.sandbox.guard']\n",
    "import torch\nC = getattr(torch, '_C')\n",
])
def test_getattr_of_a_listed_or_private_name_on_a_module_is_refused(source):
    assert refused(source)


@pytest.mark.parametrize("source", [
    "import sys\nsys.path.insert(0, '/scratch/x')\n",
    "import sys as s\ns.path.append('/tmp')\n",
    "import os\nos.sys.path.insert(0, '/tmp')\n",
    "from sys import path\n",
    "import zipimport\n",
    "import pkgutil\n",
])
def test_the_import_path_and_the_import_machinery_are_refused(source):
    assert refused(source)


@pytest.mark.parametrize("source", [
    "def _check(x):\n    return x\n\ndef f(x):\n    return _check(x)\n",
    "class KVCache:\n    def __init__(self):\n        self._length = 0\n\ndef step(cache):\n    return cache._length\n",
    "def decode(mha):\n    if not hasattr(mha, '_cache'):\n        mha._cache = None\n    return getattr(mha, '_cache')\n",
    "import os\nname = os.path.join('a', 'b')\n",
    "import torch.nn.functional as F\ny = F.softmax\n",
    "import os\nos._exit(3)\n",
])
def test_the_files_own_private_names_and_public_apis_are_not_refused(source):
    assert not refused(source)
