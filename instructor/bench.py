"""Benchmarks of the reference (instructors): attention at the lab's shape and over sequence lengths,
and decoding with and without a KV cache.

    python -m instructor bench [--quick] [--write | --no-write]

Everything runs with torch.set_num_threads(2), under torch.no_grad(). The lab's shape is measured
twice, in two child processes: with PyTorch's default allocation (4 KiB pages) and with huge pages
(THP_MEM_ALLOC_ENABLE=1); the sweep and decoding run in this process, with its environment. Times are
medians of repeated calls; the implementations of one shape are run in turn within each repeat, so a
busy machine slows them alike. Memory is tracked as grader/sandbox/guard.py tracks it: a TorchDispatchMode
over the storages that operations create (views and in-place results are not new memory); "largest"
is the largest such storage, "peak" the most bytes alive at once during the call (inputs excluded,
the result included). torch's fused kernel allocates its scratch space in C++, out of the mode's sight.

Writes docs/benchmarks.md and docs/figures/benchmarks.png (unless --no-write). `--quick` measures
the lab's shape, T = 4096 and two decoding lengths, in under a minute on 2 cores, and only prints
(add --write to write its figures into docs/ as well).
"""

import argparse
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
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from grader.paths import REPO, SOLUTIONS
from instructor.bench_grade import marked_section
from instructor.figures import load_attention

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
OUT_MD = REPO / "docs" / "benchmarks.md"
OUT_PNG = REPO / "docs" / "figures" / "benchmarks.png"
TARGETS = {
    "reference_ratio": 2.0,  # reference / torch at the lab's shape
    "tiled_ratio": 1.7,  # tiled / torch at T = 4096
    "tiled_memory": 1 / 8,  # tiled's largest intermediate / the reference's at T = 4096
    "decode_speedup": 5.0,  # uncached / cached time per token at T = 2048
}


sol = load_attention(SOLUTIONS)


# -- the implementations compared (all causal) ------------------------------------------------------

def causal_softmax(scores):
    """Out-of-place causal mask, then softmax over the keys, as a first from-scratch version does."""
    causal = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()  # (Tq, Tk)
    return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)  # (..., Tq, Tk)


def matmul_form(q, k, v):
    """What a first from-scratch version looks like: q @ k^T, out-of-place mask, softmax, @ v."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (..., Tq, Tk)
    weights = causal_softmax(scores)  # (..., Tq, Tk)
    return weights @ v, weights


def einsum_form(q, k, v):
    """The same with einsum."""
    scores = torch.einsum("...id,...jd->...ij", q, k) / math.sqrt(q.size(-1))  # (..., Tq, Tk)
    weights = causal_softmax(scores)  # (..., Tq, Tk)
    return torch.einsum("...ij,...jd->...id", weights, v), weights


NEW_TENSOR = "a new [B, H, T, T] tensor"  # not attention: the cost of allocating and filling one


IMPLEMENTATIONS = {
    # name: (function of (q, k, v) returning the output or (output, weights), returns weights)
    "reference": (lambda q, k, v: sol.scaled_dot_product_attention(q, k, v, is_causal=True), True),
    "matmul form": (matmul_form, True),
    "einsum form": (einsum_form, True),
    "tiled_attention": (lambda q, k, v: sol.tiled_attention(q, k, v, is_causal=True, block_size=BLOCK_SIZE), False),
    "torch SDPA": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), False),
    NEW_TENSOR: (lambda q, k, v: q.new_empty(*q.shape[:-1], k.size(-2)).fill_(0.0), False),
}
# PyTorch's CPU allocator maps a large tensor in 4 KiB pages unless THP_MEM_ALLOC_ENABLE=1, which asks the
# kernel for 2 MiB pages instead. Setting it in a running process changes nothing: one child process each.
ALLOCATORS = {"4 KiB pages": "0", "huge pages": "1"}


# -- measuring ------------------------------------------------------------------------------------

class MemoryWatch(TorchDispatchMode):
    """Largest new storage and peak bytes alive, over the operations run inside it."""

    def __init__(self):
        super().__init__()
        self.live = self.peak = self.largest = 0
        self.tracked = set()

    def _release(self, pointer, nbytes):
        self.live -= nbytes
        self.tracked.discard(pointer)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
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


def memory_of(function):
    with torch.no_grad(), MemoryWatch() as watch:
        result = function()
        peak, largest = watch.peak, watch.largest
        del result
    return largest, peak


def time_in_turn(functions, repeats):
    """{name: median seconds}; each repeat runs every function once, in turn, after one warm-up call each."""
    times = {name: [] for name in functions}
    with torch.no_grad():
        for function in functions.values():
            function()
        for _ in range(repeats):
            for name, function in functions.items():
                start = time.perf_counter()
                function()
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def qkv(batch, heads, length, d, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(batch, heads, length, d, generator=g) for _ in range(3))


def attention_rows(shape, names, repeats):
    """[{name, ms, ratio, largest_mib, peak_mib, weights}] at one (B, H, T, d)."""
    q, k, v = qkv(*shape)
    functions = {name: (lambda f=IMPLEMENTATIONS[name][0]: f(q, k, v)) for name in names}
    times = time_in_turn(functions, repeats)
    rows = []
    for name in names:
        largest, peak = memory_of(functions[name])
        rows.append({
            "name": name, "ms": times[name] * 1e3, "ratio": times[name] / times["torch SDPA"],
            "largest_mib": largest / MIB, "peak_mib": peak / MIB, "weights": IMPLEMENTATIONS[name][1],
        })
    return rows


def lab_rows_by_allocator(repeats):
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


def sweep_shape(length):
    """(B, H, T, 64) with B * H * T^2 = the lab's, H = 8 while B * H >= 8."""
    batch_heads = max(1, VOLUME // (length * length))
    heads = min(N_HEADS, batch_heads)
    return batch_heads // heads, heads, length, 64


def decode_rows(lengths, repeats):
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
            rows.append({"length": length, "cached_ms": statistics.median(cached) * 1e3,
                         "uncached_ms": statistics.median(uncached) * 1e3})
    for row in rows:
        row["speedup"] = row["uncached_ms"] / row["cached_ms"]
    return rows


def linear_fit(xs, ys):
    """(intercept, slope, largest relative residual) of the least-squares line through (xs, ys)."""
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    var = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / var if var else 0.0
    intercept = mean_y - slope * mean_x
    residual = max(abs(intercept + slope * x - y) / y for x, y in zip(xs, ys))
    return intercept, slope, residual


def loglog_slope(rows, key):
    first, last = rows[0], rows[-1]
    if first["length"] == last["length"]:
        return float("nan")
    return math.log(last[key] / first[key]) / math.log(last["length"] / first["length"])


# -- reporting ------------------------------------------------------------------------------------

def format_attention_table(by_allocator):
    """One row per implementation: time and ratio to torch with each allocator, then memory."""
    header = "| implementation | returns weights | " + " | ".join(
        f"{allocator}: ms | x torch" for allocator in by_allocator) + " | largest new tensor (MiB) | peak (MiB) |"
    lines = [header, "|---|:-:|" + "---:|---:|" * len(by_allocator) + "---:|---:|"]
    for rows in zip(*by_allocator.values()):
        first = rows[0]
        times = " | ".join(f"{row['ms']:.0f} | {row['ratio']:.2f}" for row in rows)
        lines.append(f"| {first['name']} | {'yes' if first['weights'] else 'no'} | {times} "
                     f"| {first['largest_mib']:.1f} | {first['peak_mib']:.1f} |")
    return lines


def format_sweep_table(sweep):
    names = [row["name"] for row in next(iter(sweep.values()))]
    header = "| T | (B, H) | " + " | ".join(f"{name}: ms (x torch), largest MiB" for name in names) + " |"
    lines = [header, "|" + "---|" * (len(names) + 2)]
    for length, rows in sweep.items():
        batch, heads = sweep_shape(length)[:2]
        cells = [f"{row['ms']:.0f} ({row['ratio']:.2f}), {row['largest_mib']:.1f}" for row in rows]
        lines.append(f"| {length} | ({batch}, {heads}) | " + " | ".join(cells) + " |")
    return lines


def format_decode_table(rows):
    lines = ["| length T | with KVCache (ms/token) | without cache (ms/token) | speed-up |", "|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['length']} | {row['cached_ms']:.3f} | {row['uncached_ms']:.1f} | {row['speedup']:.0f}x |")
    return lines


def summary(lab, sweep, decode):
    figures = {}
    for name, key in (("reference", "reference_ratio"), ("matmul form", "matmul_ratio")):
        figures[key] = {allocator: next(row["ratio"] for row in rows if row["name"] == name)
                        for allocator, rows in lab.items()}
    longest = max(sweep)
    at_longest = {row["name"]: row for row in sweep[longest]}
    figures["sweep_t"] = longest
    figures["tiled_ratio"] = at_longest["tiled_attention"]["ratio"]
    figures["tiled_memory"] = at_longest["tiled_attention"]["largest_mib"] / at_longest["reference"]["largest_mib"]
    figures["tiled_largest"] = at_longest["tiled_attention"]["largest_mib"]
    figures["reference_largest"] = at_longest["reference"]["largest_mib"]
    by_length = {row["length"]: row for row in decode}
    target_length = 2048 if 2048 in by_length else max(by_length)
    figures["decode_t"] = target_length
    figures["decode_speedup"] = by_length[target_length]["speedup"]
    figures["cached_slope"] = loglog_slope(decode, "cached_ms")
    figures["uncached_slope"] = loglog_slope(decode, "uncached_ms")
    intercept, slope, residual = linear_fit([r["length"] for r in decode], [r["cached_ms"] for r in decode])
    figures["cached_fit"] = (intercept, slope * 1000, residual)
    return figures


def verdicts(figures):
    def mark(ok):
        return "met" if ok else "NOT met"

    reference, matmul = figures["reference_ratio"], figures["matmul_ratio"]
    return [
        ("- Reference / torch at the lab's shape: "
        + ", ".join(f"{ratio:.2f}x with {allocator}" for allocator, ratio in reference.items())
        + f" (target <= {TARGETS['reference_ratio']:g}x: "
        + ", ".join(f"{mark(ratio <= TARGETS['reference_ratio'])} with {allocator}"
                    for allocator, ratio in reference.items())
        + "); the plain matmul form: " + ", ".join(f"{ratio:.2f}x" for ratio in matmul.values()) + "."),
        (f"- tiled_attention at T = {figures['sweep_t']}: largest intermediate {figures['tiled_largest']:.1f} MiB vs "
        f"the reference's {figures['reference_largest']:.0f} MiB = {figures['tiled_memory']:.3f} (target < 1/8: "
        f"{mark(figures['tiled_memory'] < TARGETS['tiled_memory'])}); time {figures['tiled_ratio']:.2f}x torch "
        f"(target <= {TARGETS['tiled_ratio']:g}x: {mark(figures['tiled_ratio'] <= TARGETS['tiled_ratio'])})."),
        (f"- Cached decoding: {figures['cached_fit'][0]:.3f} ms + {figures['cached_fit'][1]:.3f} ms per 1000 cached "
        f"tokens (a line through every length, largest deviation {figures['cached_fit'][2]:.0%}); log-log slope "
        f"{figures['cached_slope']:.2f} cached vs {figures['uncached_slope']:.2f} without the cache; speed-up at "
        f"T = {figures['decode_t']}: {figures['decode_speedup']:.0f}x (target >= {TARGETS['decode_speedup']:g}x: "
        f"{mark(figures['decode_speedup'] >= TARGETS['decode_speedup'])})."),
    ]


def environment():
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


def write_markdown(path, env, lab, sweep, decode, figures, quick):
    lines = [
        "# Benchmarks",
        "",
        (f"Generated by `python -m instructor bench{' --quick' if quick else ''}` on {env['date']}; rerun it to refresh "
        "this page (do not edit by hand). Times are medians of repeated calls in one process, memory is what "
        "the operations allocate (tracked like the grader's guard), all under `torch.no_grad()`."),
        "",
        (f"Machine: {env['cpu']}, {env['cores']} cores, torch {env['torch']} (CPU), {env['threads']} threads, "
        f"load average {env['load']:.1f} before the run (the run itself adds about 2; other processes "
        "competing for the cores slow small operations most). The lab's shape is measured with both "
        "allocations below; the sweep and decoding ran with "
        f"THP_MEM_ALLOC_ENABLE={env['thp']} ({'huge pages' if env['thp'] == '1' else '4 KiB pages'})."),
        "",
        "![Benchmarks](figures/benchmarks.png)",
        "",
        "## Summary",
        "",
        *verdicts(figures),
        "",
        f"## Causal attention at the lab's shape (B, H, T, d) = {LAB_SHAPE}, float32",
        "",
        *format_attention_table(lab),
        "",
        "- *reference*: `solutions/attention.py`'s `scaled_dot_product_attention(q, k, v, is_causal=True)`;",
        "  *matmul form* and *einsum form*: the same maths written plainly (out-of-place mask, softmax);",
        f"  *tiled_attention*: the `tiled` bonus task's reference, block_size={BLOCK_SIZE}; *torch SDPA*:",
        "  `F.scaled_dot_product_attention`, the fused kernel that never stores the weights; *a new [B, H, T, T]",
        "  tensor*: `torch.empty` of the weights' shape, filled with zeros: not attention, the price of one",
        "  256 MiB intermediate.",
        "- *4 KiB pages* is PyTorch's default: the kernel maps each new large tensor page by page on first",
        "  touch. *huge pages* sets `THP_MEM_ALLOC_ENABLE=1`, which makes PyTorch ask for 2 MiB pages",
        "  (transparent huge pages, `madvise` mode). The arithmetic is the same; what changes is the price",
        "  of each new 256 MiB tensor (the last row). The reference creates two, the scores and the",
        "  weights; torch's fused kernel none, so the allocation decides much of the ratio.",
        "",
        "## Sequence-length sweep (B * H * T^2 constant, d = 64, causal)",
        "",
        *format_sweep_table(sweep),
        "",
        f"## Decoding one token with `MultiHeadAttention({D_MODEL}, {N_HEADS})`, B = 1",
        "",
        "With the cache, `decode_step` projects the new token only and attends over the cached keys. Without",
        "it, each new token reruns the causal forward pass over the whole prefix (`mha(x, is_causal=True)`).",
        "",
        *format_decode_table(decode),
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = marked_section(path)  # the grading benchmarks' section
    path.write_text("\n".join(lines) + ("\n" + kept if kept else ""))


def draw(path, sweep, decode):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    figure = Figure(figsize=(15, 4.4), dpi=100, layout="constrained")
    ratio_axes, memory_axes, decode_axes = figure.subplots(1, 3)
    lengths = list(sweep)
    styles = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-"), ("v", "--")]
    for (marker, line), name in zip(styles, [row["name"] for row in next(iter(sweep.values()))]):
        rows = [next(row for row in sweep[length] if row["name"] == name) for length in lengths]
        style = dict(marker=marker, linestyle=line, label=name, markerfacecolor="none")
        ratio_axes.plot(lengths, [row["ratio"] for row in rows], **style)
        memory_axes.plot(lengths, [row["largest_mib"] for row in rows], **style)
    ratio_axes.axhline(1.0, color="grey", linewidth=0.8)
    ratio_axes.set(xscale="log", yscale="log", xlabel="sequence length T (B*H*T^2 constant)",
                   ylabel="time / torch SDPA", title="Causal attention: time relative to torch")
    memory_axes.set(xscale="log", yscale="log", xlabel="sequence length T (B*H*T^2 constant)",
                    ylabel="largest new tensor (MiB)", title="Largest intermediate (a [B, H, T, T] tensor is 256 MiB)")
    for axes in (ratio_axes, memory_axes):
        axes.set_xticks(lengths, [str(length) for length in lengths])
        axes.xaxis.set_minor_locator(NullLocator())
        axes.legend(fontsize=8)
    decode_lengths = [row["length"] for row in decode]
    decode_axes.plot(decode_lengths, [row["cached_ms"] for row in decode], marker="o", label="decode_step + KVCache")
    decode_axes.plot(decode_lengths, [row["uncached_ms"] for row in decode], marker="o", label="full forward, no cache")
    decode_axes.set(xscale="log", yscale="log", xlabel="tokens so far T", ylabel="ms per generated token",
                    title=f"Decoding, MultiHeadAttention({D_MODEL}, {N_HEADS}), B = 1")
    decode_axes.set_xticks(decode_lengths, [str(length) for length in decode_lengths])
    decode_axes.xaxis.set_minor_locator(NullLocator())
    decode_axes.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, metadata={"Software": None})


def print_section(title, lines):
    print(f"\n{title}")
    for line in lines:
        print("  " + line)


def add_arguments(parser):
    parser.add_argument("--quick", action="store_true", help="fewer shapes and repeats (under a minute)")
    parser.add_argument("--write", action=argparse.BooleanOptionalAction, default=None,
                        help="write docs/benchmarks.md and its plot (default: yes, except with --quick)")
    parser.add_argument("--lab-shape-json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=5, help=argparse.SUPPRESS)


def run(args):
    write = (not args.quick) if args.write is None else args.write
    torch.set_num_threads(THREADS)
    if args.lab_shape_json:  # the child process of lab_rows_by_allocator
        print(json.dumps(attention_rows(LAB_SHAPE, list(IMPLEMENTATIONS), args.repeats)))
        return 0
    env = environment()
    started = time.perf_counter()
    print(f"torch {env['torch']}, {env['threads']} threads, {env['cpu']}, load {env['load']:.1f}, "
          f"THP_MEM_ALLOC_ENABLE={env['thp']}", flush=True)
    lab = lab_rows_by_allocator(3 if args.quick else 5)
    print_section(f"causal attention at (B, H, T, d) = {LAB_SHAPE}, float32", format_attention_table(lab))
    sweep_names = ["reference", "tiled_attention", "torch SDPA"]
    if not args.quick:
        sweep_names = [name for name in IMPLEMENTATIONS if name != NEW_TENSOR]
    sweep = {}
    for length in QUICK_SWEEP if args.quick else SWEEP:
        sweep[length] = attention_rows(sweep_shape(length), sweep_names, 3)
        print(f"  swept T = {length} ({time.perf_counter() - started:.0f} s)", flush=True)
    print_section("sweep (B * H * T^2 constant, d = 64)", format_sweep_table(sweep))
    decode = decode_rows(QUICK_DECODE_LENGTHS if args.quick else DECODE_LENGTHS, 15 if args.quick else 31)
    print_section(f"decoding with MultiHeadAttention({D_MODEL}, {N_HEADS}), B = 1", format_decode_table(decode))

    figures = summary(lab, sweep, decode)
    print_section("summary", verdicts(figures))
    if env["load"] > 1.0:
        print(f"\nwarning: the load average was {env['load']:.1f} before the run: other processes competed for the "
              "cores, so the times (of small operations most) are noisy")
    if write:
        write_markdown(OUT_MD, env, lab, sweep, decode, figures, args.quick)
        draw(OUT_PNG, sweep, decode)
        print(f"\nwrote {OUT_MD.relative_to(REPO)} and {OUT_PNG.relative_to(REPO)}")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0

