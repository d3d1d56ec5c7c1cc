"""The allow-list scan of attention.py (grader/capabilities.py, lab/allowed-use.json): honest code in any style
is never refused; what reaches the grader's code, torch's attention or files is refused with its line; a file
that cannot be read is the student's, with what to change; the scan never raises."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from grader.capabilities import refusal, scan
from grader.lab import LAB
from grader.paths import REPO
from instructor import allowed_names
from instructor.mutants import apply, every_mutant

ATTACKS = REPO / "tests" / "tooling" / "redteam" / "scan"  # a red team's, written against this scan
CORRECT = [REPO / "solutions" / "attention.py", REPO / "assignment" / "attention.py",
           *sorted((REPO / "tests" / "corpus" / "fresh").glob("correct_*.py"))]


def refused(source: str) -> bool:
    return bool(scan(source))


# --- honest code, in any style, is never refused -------------------------------------------------------

@pytest.mark.parametrize("path", CORRECT, ids=lambda path: path.name)
def test_every_correct_file_of_the_project_passes(path):
    assert scan(path.read_bytes()) == []


def test_every_catalogued_mistake_passes_the_scan_and_is_graded_for_its_mistake():
    """numpy_softmax too: np.exp is allowed, the round trip through numpy is refused while it runs."""
    reference = (REPO / "solutions" / "attention.py").read_text()
    assert [mutant.name for mutant in every_mutant() if scan(apply(mutant, reference))] == []


@pytest.mark.parametrize("source", [
    "import torch\nmatch torch.float32:\n    case torch.bool:\n        x = 1\n    case _:\n        x = 2\n",
    "from dataclasses import dataclass, field\nimport torch\n@dataclass\nclass KVCache:\n"
    "    keys: torch.Tensor = None\n    def length(self):\n        return self.keys.size(-2)\n",
    "from collections import namedtuple\nOut = namedtuple('Out', 'output weights')\n"
    "def f(o):\n    return o.output, o.weights\n",
    "import torch.nn as nn\nclass M(nn.Module):\n    def reset(self):\n        for m in self.modules():\n"
    "            if isinstance(m, nn.Linear):\n                nn.init.xavier_uniform_(m.weight)\n",
    "def proj(mha, name):\n    return getattr(mha, 'w_q'), hasattr(mha, 'w_o')\n",
    "from typing import Optional, Tuple, TypeVar\nT = TypeVar('T')\n",
    "from __future__ import annotations\nfrom torch import nn, Tensor\nimport torch.nn.functional as F\n",
    "import functools, itertools, math, warnings\nf = functools.partial(math.sqrt)\nwarnings.warn('x')\n",
    "calls = 0\ndef f():\n    global calls\n    calls += 1\n    return lambda x: x\n",
    "class E(ValueError):\n    def __init__(self, msg):\n        super().__init__(msg)\n"
    "        self.name = type(self).__name__\n",
    "class C:\n    def __init__(self):\n        self._cache = None\n        self._dtype = None\n"
    "        self._values = []\n",
    "import torch\ndef f(x):\n    return x.max(dim=-1).values, x.mT, x.cpu(), torch.finfo(x.dtype).min\n",
    "def f(x):\n    return f'{x!r} in {__name__}'\n",
    "import torch\nclass Attention(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.attention = None\n        self.attn = None\n",
])
def test_code_in_an_unusual_style_is_not_refused(source):
    assert scan(source) == []


# --- what reaches the grader's code is refused ---------------------------------------------------------

@pytest.mark.parametrize("source", [
    "import sys\nmatch sys:\n    case object(modules=m):\n        pass\n",
    "import torch\nmatch torch:\n    case object(sys=s):\n        pass\n",
    "import torch\nmatch torch.Tensor.tolist:\n    case object(__globals__=g):\n        pass\n",
    "import torch\nmatch torch.nn:\n    case object(functional=f):\n        pass\n"
    "match f:\n    case object(scaled_dot_product_attention=a):\n        pass\n",
])
def test_a_class_pattern_reads_attributes_and_is_checked_like_one(source):
    assert refused(source)


@pytest.mark.parametrize("source", [
    "import torch\nself = torch\ns = getattr(self, 'sy' + 's')\n",
    "import torch\ncls = torch\ns = getattr(cls, 'sys')\n",
    "import torch\ng = getattr\ns = g(torch, 'sys')\n",
    "import functools, torch\nf = functools.partial(getattr, torch)\n",
    "def f(o, name):\n    return getattr(o, name)\n",
])
def test_getattr_takes_only_a_literal_allowed_name_whatever_the_object_is_called(source):
    assert refused(source)


@pytest.mark.parametrize("source", [
    "import torch\n_ops = torch.ops\nattention = _ops.aten.scaled_dot_product_attention\n",
    "import torch\nattention = torch.nn.functional.scaled_dot_product_attention\n",
    "from torch.nn.functional import scaled_dot_product_attention as sdpa\n",
    "import torch.nn as nn\nm = nn.MultiheadAttention(8, 2)\n",
    "import torch\nm = torch.nn.attention.flex_attention\n",
    "import torch\nk = torch._C\n",
    "import torch\nm = torch.library\n",
    "import torch\nx = torch._safe_softmax\n",
    "import torch\nx = torch.load('w.pt')\n",
    "import torch\nx = torch.sys.modules\n",
    "import torch.nn.functional as F\nclass C:\n    def __init__(self):\n        self.sys = 1\n"
    "        self.scaled_dot_product_attention = 2\nx = F.scaled_dot_product_attention\n",
])
def test_torchs_attention_and_its_internals_are_refused_by_any_route(source):
    assert refused(source)


@pytest.mark.parametrize("source", [
    "import os\n", "import importlib\n", "from . import x\n",
    "from torch.nn.functional import *\n", "import torch.utils\n", "from torch import ops\n",
    "from typing import get_type_hints\n", "x = open('/etc/passwd').read()\n", "exec('1')\n", "eval('1')\n",
    "x = __builtins__\n", "x = vars()\n", "x = globals()\n", "def f():\n    return f.__globals__\n",
    "def f():\n    return f.__code__\n", "x = '{0.__globals__}'.format(len)\n",
    "async def f():\n    pass\n", "try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame\n",
])
def test_imports_builtins_and_dunders_outside_the_list_are_refused(source):
    assert refused(source)


@pytest.mark.parametrize("source", [
    "import sys\nprint('debug', file=sys.stderr)\n",
    "import numpy as np\nscale = 1 / np.sqrt(8)\nlow = np.finfo(np.float32).min\n",
    "from numpy import sqrt, inf\n",
    "class M:\n    def params(self):\n        return [getattr(self, name) for name in ('w_q', 'w_k', 'w_v')]\n",
])
def test_a_few_names_of_sys_and_numpy_and_getattr_over_literal_names_are_allowed(source):
    assert scan(source) == []


@pytest.mark.parametrize("source", [
    "import sys\nm = sys.modules\n", "import sys as s\nt = s\n", "import sys\nmatch sys:\n    case object(modules=m):\n"
    "        pass\n", "import numpy as np\nw = np.load('w.npy')\n", "from numpy import ctypeslib\n",
    "import sys\nx = getattr(sys, 'stderr')\n",
    "for name in ('w_q', 'sys'):\n    getattr(torch, name)\n",
    "for name in ('w_q',):\n    pass\nname = 'modules'\ngetattr(x, name)\n",
])
def test_sys_and_numpy_only_as_name_dot_listed_attribute_and_loops_only_over_allowed_literals(source):
    assert refused(source)


@pytest.mark.parametrize("path", sorted(ATTACKS.glob("*.py")), ids=lambda path: path.stem)
def test_each_attack_that_passed_an_earlier_scan_is_refused(path):
    """Each reached sys, a frame, __globals__, exec, a file or torch's attention past the scan of its day: a
    coding line, __match_args__ or a metaclass built at run time, a loop variable rebound by a match
    capture, update_wrapper or singledispatch turning names into attributes or code, sys.stderr's FileIO,
    warnings' linecache; torch's private functions that import by name or unpickle (_import_dotted_name,
    storage._load_from_bytes), Storage.type('module'), the nested-tensor masked softmax. The white-box round:
    Storage.type(a variable), a coding line behind a form feed, `import a.b` binding package a, x._private -= y
    (which reads it), a print of the file's own, catch_warnings()._module, license's file printer, a format
    template built at run time, a metaclass in class keywords. The class-building round: the class of a class
    (type, reached through type(C), C.__class__, getattr, a comparison with an own __eq__ or __contains__,
    numbers.ABCMeta, typing.Type as a base), Enum's functional form, slots named at run time, copy's pickling
    registry, an instance as a base; and their second round: a class's own __class__ property, a module's
    attribute or list set by the file, copy and Enum reached through torch's modules, typing.Type under another
    name, an import rebound in its scope, a profiler writing its trace to any path; and a third: a dataclass
    field's annotation read back by fields(), an instance set on a module by setattr used as a base; a fourth:
    an import of the same name in another scope hiding typing.Type or Enum, dunders bound by a nested class, a
    match capture or an import alias, Union[instance] as a base, setattr over a loop, a string reaching
    .type() through a module or a ParameterDict, a tunable function that globs and reads files; a fifth: a
    dataclass Field renamed to code that the next dataclass compiles, a builtin read before the module binds
    its name, the profiler's trace observer and handler; a sixth: quantization's fuse_modules (getattr by a
    dotted name), an Enum classmethod's cls called with names, a cached_property renamed to a dunder, a
    storage's .type or str.format kept as a value, a pluggable allocator that loads any path."""
    assert scan(path.read_bytes())


@pytest.mark.parametrize("source", [
    '"""Uses Tensor.__rmatmul__ to multiply."""\nx = 1\n',
    "import torch.nn as nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        for name in ('w_q', 'w_k'):\n            setattr(self, name, nn.Linear(2, 2))\n"
    "def helper(table):\n    for name, value in table.items():\n        print(name, value)\n",
    "import torch\ndef f(x):\n    return x.type(dtype=torch.float64), x.type(torch.float32, non_blocking=True)\n",
    "def forward(self, input, filter=None):\n    return input if filter is None else filter(input)\n",
    "import collections.abc\ndef f(x):\n    return isinstance(x, collections.abc.Sequence)\n",
    "import collections.abc as cabc\nS = cabc.Sequence\n",
    "x = '{:.3f} and {0} and {name}'.format(1.0, name=2)\ny = 'a {0[1]}'.format([1, 2])\n",
    "def f():\n    try:\n        pass\n    except (ValueError, RuntimeError, NotImplementedError) as error:\n        raise\n",
])
def test_idioms_an_earlier_scan_refused_pass(source):
    """Found by the white-box red team: a docstring naming a dunder, a getattr loop whose variable name a
    helper elsewhere reuses, .type(dtype=...), a builtin's name as a parameter, `import collections.abc`."""
    assert scan(source) == []


@pytest.mark.parametrize("source", [
    "def f(x):\n    raise TypeError(f'got {type(x).__name__}, {x.__class__.__qualname__}')\n",
    "import torch\ndef f(x, y):\n    assert type(x) is torch.Tensor and type(x) == type(y) and type(y) in (int, float)\n",
    "def f(x, y):\n    return isinstance(x, (int, type(None))) and issubclass(type(x), y.__class__)\n",
    "def f(x):\n    print(type(x))\n    return '%s' % type(x) + str(x.__class__) + f'{type(x)!r}'\n",
    "class Cache:\n    def __init__(self, size, heads=1):\n        self.size = size\n"
    "    def empty(self):\n        return type(self)(self.size, heads=2), self.__class__(self.size, 2)\n",
    "def f(x):\n    return getattr(x, '__class__').__name__\n",
])
def test_a_class_read_for_its_name_compared_or_given_to_isinstance_passes(source):
    """type(x) and x.__class__ as correct code uses them: in messages, comparisons, isinstance, and calls
    of a file's own class that cannot be the three-argument type."""
    assert scan(source) == []


@pytest.mark.parametrize("source", [
    "import enum\nclass Kind(enum.Enum):\n    CAUSAL = 1\n    FULL = 2\n"
    "def f(k: Kind, v) -> Kind:\n    assert isinstance(k, Kind) and k is not Kind.FULL and k in list(Kind)\n"
    "    return Kind(v) if v else Kind['CAUSAL']\nNAMES = [kind.name for kind in Kind]\n",
    "from enum import IntEnum, auto\nclass Mode(IntEnum):\n    A = auto()\nM: Mode = Mode.A\nB = Mode.A is M\n",
    "from typing import Generic, TypeVar\nimport torch.nn as nn\nT = TypeVar('T')\n"
    "class Box(Generic[T], nn.Module):\n    __slots__ = ('value',)\n",
    "import torch\ndef f(x, y):\n    return type(x) is torch.Tensor or type(x) != type(y) or type(x) in (int, None)\n",
    "from typing import Optional, Type\nimport torch\ndef f(kind: Type[torch.Tensor], y: Optional[Type] = None) -> Type:"
    "\n    return kind\n",
    "import torch.nn as nn\nclass Block(nn.Module):\n    pass\nclass Wide(Block, object):\n    pass\n",
    "from dataclasses import dataclass\nfrom enum import Enum\nclass Kind(Enum):\n    CAUSAL = 1\n"
    "@dataclass\nclass Config:\n    kind: Kind = Kind.CAUSAL\n",
    "def f(x, y):\n    return type(x) in (int, float) and type(x) not in [type(y)]\n",
    "import torch\nimport torch.nn as nn\ndef f(q, m):\n    if type(q) != torch.Tensor or type(m) == nn.Module:\n"
    "        raise TypeError(type(q).__name__)\n",
    "class Mask:\n    def __init__(self, allowed):\n        self.allowed = allowed\n"
    "    def __and__(self, other):\n        return Mask(self.allowed & other.allowed)\n"
    "    def __invert__(self):\n        return Mask(~self.allowed)\n",
    "from typing import ClassVar, Type\nclass A:\n    pass\nclass B:\n    core: ClassVar[Type[A]] = A\n",
    "from dataclasses import dataclass, field\n@dataclass\nclass Config:\n    sizes: list = field(default_factory=list)\n"
    "def forward(self, input):\n    return input\n",
    "import torch\ndef f(q):\n    return q.type(torch.float32) if q.device.type == 'cpu' else f'{q.device.type}'\n",
    "from enum import Enum\nclass K(Enum):\n    A = 1\n    @classmethod\n    def parse(cls, v):\n        return cls(v)\n",
])
def test_enums_generic_bases_literal_slots_and_class_comparisons_pass(source):
    """Enum classes read for members, iterated or called with a value; Generic[T] bases; literal slots;
    an object's class compared with torch's classes, builtins or another object's class."""
    assert scan(source) == []


@pytest.mark.parametrize("source", [
    "import enum\nE = enum.Enum('E', 'a b')\n", "from enum import Enum\nclass K(Enum):\n    pass\nL = K('L', 'a')\n",
    "from enum import Enum\nmake = Enum\n", "import functools, enum\nf = functools.partial(enum.Flag, 'F')\n",
    "class S:\n    __slots__ = tuple(NAMES)\n", "class S:\n    __slots__ = 'a'\n    __slots__ += ('b',)\n",
    "import typing\nclass M(typing.Type[int]):\n    pass\n", "from typing import Type as T\nclass M(T):\n    pass\n",
    "def f(g):\n    class C(g()):\n        pass\n",
    "def f(x, other):\n    return type(x) == other\n", "def f(x, box):\n    return x.__class__ in box\n",
    "import copy\nt = copy.dispatch_table\n", "from numbers import ABCMeta\n",
    "import enum\nclass K(enum.Enum):\n    A = 1\nE = K.mro()[1]\n",
    "import enum\nclass K(enum.Enum):\n    A = 1\ndef f(own):\n    return own[K], own == K, K == own\n",
    "import enum\nx: object = enum.Enum\n",
    "import torch\nclass G:\n    pass\ntorch.G = G()\ndef f(x):\n    return type(x) == torch.G\n",
    "import torch\ndef f(x, y):\n    return type(x) == y.__class__\n",
    "import torch\ntorch.Tensor = 1\ndef f(x):\n    return type(x) == torch.Tensor\n",
    "class Spoof:\n    @property\n    def __class__(self):\n        return 1\n",
    "import typing\nBase = typing.Type\n", "from torch import nn\nnn = 3\nclass M(nn):\n    pass\n",
    "class Hook:\n    pass\nseed = Hook()\nclass Shape(seed):\n    pass\n",
    "def f(x, y):\n    return x in (int, type(y))\n", "def f(x, y):\n    return type(x) in type(y)\n",
    "import torch\nsetattr(torch, 'seed', 1)\nclass S(torch.seed):\n    pass\n",
    "import enum, dataclasses\n@dataclasses.dataclass\nclass H:\n    kind: enum.Enum = None\n",
    "import typing\nclass H:\n    kind: typing.Type[object] = None\n",
    "def f(scores, mask):\n    return scores + mask.type(scores.dtype)\n",
    "from typing import Union\nclass Hook:\n    pass\nseed = Hook()\nclass S(Union[seed]):\n    pass\n",
    "from dataclasses import field\nf = field(default=0)\n", "import dataclasses\nfs = dataclasses.fields\n",
    "exec('x = 1')\nexec = None\n", "class A:\n    x = open('f')\n    open = 1\n",
    "import torch\nconvert = torch.UntypedStorage(1).type\n", "fill = str.format\n",
    "from enum import Enum\nclass K(Enum):\n    @classmethod\n    def make(cls, n):\n        return cls(n, 'a b')\n",
])
def test_classes_built_from_names_any_other_way_are_refused(source):
    """Enum's functional form, slots named at run time, typing.Type outside annotations, a base that may be an
    instance, a class compared with what may be the file's own object (its __eq__ or __contains__ would receive
    it: even torch.Tensor, which the file may set; write `is`), a __class__ of the file's own, and what a whole
    module lists that is a metaclass or a registry the process reads."""
    assert refused(source)


@pytest.mark.parametrize("source", [
    "def f(x):\n    return [getattr(x, n) for n in ('__class__',)][0]('C', (), {})\n",
    "def f(x):\n    return next(getattr(x, n) for n in ['shape', '__class__'])\n",
    "def f(x):\n    return {n: getattr(x, n) for n in ('__class__', 'shape')}\n",
    "def f(x):\n    return [[getattr(x, n) for m in (1,)] for n in ('__class__',)]\n",
    "def f(x):\n    return [(c := getattr(x, n)) for n in ('__class__',)]\n",
    "def f(x):\n    for n in ('__class__',):\n        t = getattr(x, n)\n    return t\n",
])
def test_an_objects_class_read_by_getattr_over_a_loop_of_names_follows_the_class_rules(source):
    """getattr(x, n) where n runs over literals is read as each literal: "__class__" among them is an object's
    class, in a for loop or any comprehension, and kept as a value it is refused."""
    assert refused(source)


@pytest.mark.parametrize("source", [
    "def f(x):\n    cls = type(x)\n    return cls\n", "def f(x):\n    return x.__class__\n",
    "def f(x):\n    return [type(x)]\n", "def f(x, g):\n    return g(type(x))\n",
    "def isinstance(a, b):\n    return b\ndef f(x):\n    return isinstance(1, type(x))\n",
    "def f(x, a):\n    return type(x)(*a)\n", "def f(x, a):\n    return x.__class__(a, a, a)\n",
    "def f(x):\n    return type(x).mro()\n", "class C(type(int)):\n    pass\n",
    "def f(x):\n    return type(x)(x)\n",
])
def test_a_class_read_any_other_way_is_refused(source):
    """Kept, returned, passed on or called with three arguments, an object's class may be type itself."""
    assert refused(source)


@pytest.mark.parametrize("source", [
    "import torch\ndef f(x, y):\n    return x.type(y.type())\n",
    "def f(obj):\n    return '{0._secret}'.format(obj)\n", "template = '{0.a}'\ns = template.format(1)\n",
    "def f():\n    return open\n", "def g(input):\n    return input\nreader = input\n",
    "type = 3\n", "def getattr(a, b):\n    return a\n",
])
def test_a_builtin_read_scope_by_scope_and_templates_and_type_calls_are_checked(source):
    """input as a parameter is the file's own; read where nothing binds it, it is the builtin (refused)."""
    assert refused(source)


@pytest.mark.parametrize("source", [
    "# -*- coding: utf-7 -*-\nx = 1\n", "#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\nx = 1\n",
    "x = 1\n# " + "y" * 400_000 + "\n",
])
def test_a_coding_line_other_than_utf8_and_an_oversized_file_are_not_read(source):
    assert scan(source)[0].unreadable


@pytest.mark.parametrize("source", [
    "C = type('C', (), {})\n", "class M(type):\n    pass\n", "class C(metaclass=abc.ABCMeta):\n    pass\n",
    "import abc\nM = abc.ABCMeta\n", "class C:\n    def __instancecheck__(self, x):\n        return True\n",
    "class C:\n    __match_args__ = ('x',)\n", "match x:\n    case int(y):\n        pass\n",
    "for name in ('w_q',):\n    match q:\n        case name:\n            pass\n    getattr(self, name)\n",
    "import sys\ns = sys.stderr\n", "import functools\nw = functools.wraps\n",
    "import torch\nf = torch._import_dotted_name\n", "class C:\n    def __init__(self):\n        self._utils = 1\n"
    "import torch\nx = torch._utils\n", "import torch\nx = torch.zeros(1).type('torch.DoubleTensor')\n",
    "def f(x):\n    return x._private_thing\n", "import torch\nw = torch._nested_tensor_softmax_with_shape\n",
    "import torch\nw = torch._masked_softmax\n",
])
def test_what_builds_classes_or_names_at_run_time_is_refused(source):
    assert refused(source)


@pytest.mark.parametrize("source", [
    "# -*- coding: utf-8 -*-\nx = 1\n", "def f(x):\n    return type(x).__name__\n",
    "class C:\n    def __repr__(self):\n        return 'C'\n    def __call__(self):\n        return 1\n",
    "import copy\nd = {}\ne = d.copy()\nf = copy.deepcopy(d)\n", "import torch\nparts = torch.zeros(4).split(2)\n",
    "from dataclasses import dataclass, field\nfrom typing import Optional, cast\n",
    "class KVCache:\n    def __init__(self):\n        self._keys, self._values, self._length = None, None, 0\n"
    "    def size(self):\n        return self._length\n",
    "import torch\ndef f(x):\n    return x.type(torch.float64), x.type(), x.device.type\n",
    "from collections import namedtuple\nP = namedtuple('P', 'a b')\nd = P(1, 2)._asdict()\n",
])
def test_what_honest_code_writes_near_those_lines_is_not_refused(source):
    assert scan(source) == []


def test_a_refusal_names_the_line_and_the_name():
    findings = scan("import torch\n\n\nx = torch.ops\n")
    assert [finding.line for finding in findings] == [4] and ".ops" in findings[0].construct
    assert "line 4: .ops" in refusal(findings) and "What you may use" in refusal(findings)


# --- a file that cannot be read is refused as the student's, and the scan never raises ------------------

@pytest.mark.parametrize("source, says", [
    (b"x = 1\n\xff\xfe = 2\n", "not UTF-8"),
    ("x = " + "1+" * 4000 + "1\n", "nested"),
    ("x = " + "(" * 300 + "1" + ")" * 300 + "\n", "nested"),
    ("def f(:\n", "cannot read"),
    ("x = 1\0\n", "cannot read"),
    ("x = 1\n" * 6000, "lines"),
])
def test_a_file_python_cannot_read_is_refused_with_what_to_change(source, says):
    findings = scan(source)
    assert findings and findings[0].unreadable and says in str(findings[0])
    assert "cannot be graded as it is" in refusal(findings)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_the_scan_never_raises_on_any_bytes(source):
    scan(source)


def test_the_scan_never_raises_on_generated_programs():
    hypothesmith = pytest.importorskip("hypothesmith")

    # without the target phase: hypothesmith's programs carry targets, whose hill-climbing took 10-50 s and
    # generates no new kind of program
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck),
              phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
    @given(hypothesmith.from_node())
    def check(source):
        scan(source)

    check()


# --- the description is data, regenerated from torch ----------------------------------------------------

def test_the_names_file_is_what_the_installed_torch_gives(tmp_path):
    """A new torch changes the names: regenerate (python -m instructor allowed-names) and review the diff. In a
    fresh process, as the command runs: what torch has loaded decides what is reachable."""
    out = tmp_path / "names.json"
    subprocess.run([sys.executable, "-m", "instructor", "allowed-names", "--out", str(out)], cwd=REPO, check=True,
                   capture_output=True, timeout=300)
    assert json.loads(out.read_text()) == json.loads((LAB.folder / "allowed-names.json").read_text())


def test_the_handouts_table_is_generated_from_the_same_description():
    handout = Path(allowed_names.HANDOUT).read_text(encoding="utf-8")
    assert allowed_names.render_handout(handout, LAB.policy) == handout
