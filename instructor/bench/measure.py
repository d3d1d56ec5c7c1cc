"""Measuring: the implementations compared, their time and memory, and the machine they ran on.

The lab's shape is measured in two child processes: with PyTorch's default allocation (4 KiB pages) and
with huge pages (THP_MEM_ALLOC_ENABLE=1); the sweep and decoding run in this process, with its environment.
Times are medians of repeated calls; the implementations of one shape are run in turn within each repeat,
so a busy machine slows them alike. Memory is tracked as grader/sandbox/guard.py tracks it: a
TorchDispatchMode over the storages that operations create (views and in-place results are not new
memory); "largest" is the largest such storage, "peak" the most bytes alive at once during the call
(inputs excluded, the result included). torch's fused kernel allocates its scratch space in C++, out of
the mode's sight.
"""

import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from grader.paths import REPO

THREADS = 2
LAB_SHAPE = (32, 8, 512, 64)  # B, H, T, d
VOLUME = 32 * 8 * 512 * 512  # B * H * T * T kept constant over the sweep
SWEEP = (128, 256, 512, 1024, 2048, 4096)
QUICK_SWEEP = (4096,)
DECODE_LENGTHS = (128, 256, 512, 1024, 2048)
QUICK_DECODE_LENGTHS = (256, 2048)
D_MODEL, N_HEADS = 512, 8
BLOCK_SIZE = 64
MIB = 2 ** 20
NEW_TENSOR = "a new [B, H, T, T] tensor"  # not attention: the cost of allocating and filling one
# PyTorch's CPU allocator maps a large tensor in 4 KiB pages unless THP_MEM_ALLOC_ENABLE=1, which asks the
# kernel for 2 MiB pages instead. Setting it in a running process changes nothing: one child process each.
ALLOCATORS = {"4 KiB pages": "0", "huge pages": "1"}

Attention = Callable[[Tensor, Tensor, Tensor], Any]  # (q, k, v) -> output, or (output, weights)
Row = dict[str, Any]


def causal_softmax(scores: Tensor) -> Tensor:
    """Out-of-place causal mask, then softmax over the keys, as a first from-scratch version does."""
    causal = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()  # (Tq, Tk)
    return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)  # (..., Tq, Tk)


def matmul_form(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """What a first from-scratch version looks like: q @ k^T, out-of-place mask, softmax, @ v."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (..., Tq, Tk)
    weights = causal_softmax(scores)  # (..., Tq, Tk)
    return weights @ v, weights


def einsum_form(q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """The same with einsum."""
    scores = torch.einsum("...id,...jd->...ij", q, k) / math.sqrt(q.size(-1))  # (..., Tq, Tk)
    weights = causal_softmax(scores)  # (..., Tq, Tk)
    return torch.einsum("...ij,...jd->...id", weights, v), weights


def implementations(sol: ModuleType) -> dict[str, tuple[Attention, bool]]:
    """{name: (causal attention of (q, k, v), whether it returns the weights too)}; sol is solutions/attention.py."""
    return {
        "reference": (partial(sol.scaled_dot_product_attention, is_causal=True), True),
        "matmul form": (matmul_form, True),
        "einsum form": (einsum_form, True),
        "tiled_attention": (partial(sol.tiled_attention, is_causal=True, block_size=BLOCK_SIZE), False),
        "torch SDPA": (partial(F.scaled_dot_product_attention, is_causal=True), False),
        NEW_TENSOR: (lambda q, k, v: q.new_empty(*q.shape[:-1], k.size(-2)).fill_(0.0), False),
    }


class MemoryWatch(TorchDispatchMode):
    """Largest new storage and peak bytes alive, over the operations run inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.live = self.peak = self.largest = 0
        self.tracked: set[int] = set()

    def _release(self, pointer: int, nbytes: int) -> None:
        self.live -= nbytes
        self.tracked.discard(pointer)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        result = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage().data_ptr() for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        for leaf in tree_leaves(result):
            if not isinstance(leaf, torch.Tensor):
                continue
            storage = leaf.untyped_storage()
            pointer, nbytes = storage.data_ptr(), storage.nbytes()
            if pointer in inputs or pointer in self.tracked or not nbytes:
                continue
            self.tracked.add(pointer)
            self.live += nbytes
            self.peak = max(self.peak, self.live)
            self.largest = max(self.largest, nbytes)
            weakref.finalize(storage, self._release, pointer, nbytes)
        return result


def memory_of(function: Callable[[], Any]) -> tuple[int, int]:
    """(largest new storage, peak bytes alive) of one call, in bytes."""
    with torch.no_grad(), MemoryWatch() as watch:
        result = function()
        peak, largest = watch.peak, watch.largest
        del result
    return largest, peak


def time_in_turn(functions: Mapping[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """{name: median seconds}; each repeat runs every function once, in turn, after one warm-up call each."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    with torch.no_grad():
        for function in functions.values():
            function()
        for _ in range(repeats):
            for name, function in functions.items():
                start = time.perf_counter()
                function()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def qkv(batch: int, heads: int, length: int, d: int, seed: int = 0) -> tuple[Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(batch, heads, length, d, generator=g) for _ in range(3))


def attention_rows(shape: Sequence[int], compared: Mapping[str, tuple[Attention, bool]], repeats: int) -> list[Row]:
    """[{name, ms, ratio, largest_mib, peak_mib, weights}] at one (B, H, T, d); compared holds "torch SDPA"."""
    q, k, v = qkv(*shape)
    functions = {name: (lambda f=attention: f(q, k, v)) for name, (attention, _) in compared.items()}
    times = time_in_turn(functions, repeats)
    rows = []
    for name, (_, returns_weights) in compared.items():
        largest, peak = memory_of(functions[name])
        rows.append({
            "name": name, "ms": times[name] * 1e3, "ratio": times[name] / times["torch SDPA"],
            "largest_mib": largest / MIB, "peak_mib": peak / MIB, "weights": returns_weights,
        })
    return rows


def lab_rows_by_allocator(repeats: int) -> dict[str, list[Row]]:
    """{allocator: rows at the lab's shape}, each measured in a fresh process with that allocation."""
    by_allocator = {}
    for allocator, flag in ALLOCATORS.items():
        child = subprocess.run(
            [sys.executable, "-m", "instructor", "bench", "--lab-shape-json", "--repeats", str(repeats)],
            cwd=REPO, env={**os.environ, "THP_MEM_ALLOC_ENABLE": flag}, capture_output=True, text=True, check=False,
        )
        if child.returncode != 0:
            raise RuntimeError(f"the lab-shape run with {allocator} failed:\n{child.stderr}")
        by_allocator[allocator] = json.loads(child.stdout)
    return by_allocator


def sweep_shape(length: int) -> tuple[int, int, int, int]:
    """(B, H, T, 64) with B * H * T^2 = the lab's, H = 8 while B * H >= 8."""
    batch_heads = max(1, VOLUME // (length * length))
    heads = min(N_HEADS, batch_heads)
    return batch_heads // heads, heads, length, 64


def decode_rows(sol: ModuleType, lengths: Iterable[int], repeats: int) -> list[Row]:
    """Time per generated token at each length: decode_step with a KVCache vs the full causal forward."""
    torch.manual_seed(0)
    module = sol.MultiHeadAttention(D_MODEL, N_HEADS).eval()
    d_head = D_MODEL // N_HEADS
    rows = []
    with torch.no_grad():
        for length in lengths:
            cache = sol.KVCache(1, N_HEADS, length + repeats + 2, d_head)
            cache.append(torch.randn(1, N_HEADS, length - 2, d_head), torch.randn(1, N_HEADS, length - 2, d_head))
            x_t = torch.randn(1, 1, D_MODEL)
            sol.decode_step(module, x_t, cache)  # warm-up: the timed steps see length .. length + repeats - 1
            cached = []
            for _ in range(repeats):
                start = time.perf_counter()
                sol.decode_step(module, x_t, cache)
                cached.append(time.perf_counter() - start)
            prefix = torch.randn(1, length, D_MODEL)
            module(prefix, is_causal=True)  # warm-up
            uncached = []
            for _ in range(max(3, repeats // 6)):
                start = time.perf_counter()
                module(prefix, is_causal=True)[0][:, -1:]
                uncached.append(time.perf_counter() - start)
            cached_ms, uncached_ms = statistics.median(cached) * 1e3, statistics.median(uncached) * 1e3
            rows.append({"length": length, "cached_ms": cached_ms, "uncached_ms": uncached_ms,
                         "speedup": uncached_ms / cached_ms})
    return rows


def environment() -> dict[str, Any]:
    """The machine, the software and the load the run starts with."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return {
        "torch": torch.__version__, "python": platform.python_version(), "cpu": cpu,
        "cores": os.cpu_count(), "threads": torch.get_num_threads(), "load": load,
        "thp": os.environ.get("THP_MEM_ALLOC_ENABLE", "unset"),
        "date": datetime.date.today().isoformat(),
    }
