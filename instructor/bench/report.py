"""Reporting: the measured rows as tables, summary figures against their targets, the page and the plot."""

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from instructor.bench.measure import BLOCK_SIZE, D_MODEL, LAB_SHAPE, N_HEADS, Row, sweep_shape
from instructor.bench_grade import marked_section

PAGE = Path(__file__).with_name("page.md")  # docs/benchmarks.md with {placeholders}
TARGETS = {
    "reference_ratio": 2.0,  # reference / torch at the lab's shape
    "tiled_ratio": 1.7,  # tiled / torch at T = 4096
    "tiled_memory": 1 / 8,  # tiled's largest intermediate / the reference's at T = 4096
    "decode_speedup": 5.0,  # uncached / cached time per token at T = 2048
}


def format_attention_table(by_allocator: Mapping[str, list[Row]]) -> list[str]:
    """One row per implementation: time and ratio to torch with each allocator, then memory."""
    header = "| implementation | returns weights | " + " | ".join(
        f"{allocator}: ms | x torch" for allocator in by_allocator) + " | largest new tensor (MiB) | peak (MiB) |"
    lines = [header, "|---|:-:|" + "---:|---:|" * len(by_allocator) + "---:|---:|"]
    for rows in zip(*by_allocator.values(), strict=True):
        first = rows[0]
        times = " | ".join(f"{row['ms']:.0f} | {row['ratio']:.2f}" for row in rows)
        lines.append(f"| {first['name']} | {'yes' if first['weights'] else 'no'} | {times} "
                     f"| {first['largest_mib']:.1f} | {first['peak_mib']:.1f} |")
    return lines


def format_sweep_table(sweep: Mapping[int, list[Row]]) -> list[str]:
    names = [row["name"] for row in next(iter(sweep.values()))]
    header = "| T | (B, H) | " + " | ".join(f"{name}: ms (x torch), largest MiB" for name in names) + " |"
    lines = [header, "|" + "---|" * (len(names) + 2)]
    for length, rows in sweep.items():
        batch, heads = sweep_shape(length)[:2]
        cells = [f"{row['ms']:.0f} ({row['ratio']:.2f}), {row['largest_mib']:.1f}" for row in rows]
        lines.append(f"| {length} | ({batch}, {heads}) | " + " | ".join(cells) + " |")
    return lines


def format_decode_table(rows: Sequence[Row]) -> list[str]:
    lines = ["| length T | with KVCache (ms/token) | without cache (ms/token) | speed-up |", "|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['length']} | {row['cached_ms']:.3f} | {row['uncached_ms']:.1f} | {row['speedup']:.0f}x |")
    return lines


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """(intercept, slope, largest relative residual) of the least-squares line through (xs, ys)."""
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    var = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0
    intercept = mean_y - slope * mean_x
    residual = max(abs(intercept + slope * x - y) / y for x, y in zip(xs, ys, strict=True))
    return intercept, slope, residual


def loglog_slope(rows: Sequence[Row], key: str) -> float:
    first, last = rows[0], rows[-1]
    if first["length"] == last["length"]:
        return float("nan")
    return math.log(last[key] / first[key]) / math.log(last["length"] / first["length"])


def summary(lab: Mapping[str, list[Row]], sweep: Mapping[int, list[Row]], decode: Sequence[Row]) -> dict[str, Any]:
    """The figures the targets are about, from every measurement."""
    figures: dict[str, Any] = {}
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


def verdicts(figures: Mapping[str, Any]) -> list[str]:
    """One sentence per target: the figures and whether the target is met."""
    def mark(ok: bool) -> str:
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


def write_page(path: Path, env: Mapping[str, Any], lab: Mapping[str, list[Row]], sweep: Mapping[int, list[Row]],
               decode: Sequence[Row], figures: Mapping[str, Any], quick: bool) -> None:
    """docs/benchmarks.md from page.md, keeping the grading benchmarks' section (instructor.bench_grade)."""
    text = PAGE.read_text().format(
        **env, quick=" --quick" if quick else "", pages="huge pages" if env["thp"] == "1" else "4 KiB pages",
        verdicts="\n".join(verdicts(figures)), lab_shape=LAB_SHAPE, block_size=BLOCK_SIZE, d_model=D_MODEL,
        n_heads=N_HEADS, attention_table="\n".join(format_attention_table(lab)),
        sweep_table="\n".join(format_sweep_table(sweep)), decode_table="\n".join(format_decode_table(decode)),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = marked_section(path)
    path.write_text(text + ("\n" + kept if kept else ""))


def draw(path: Path, sweep: Mapping[int, list[Row]], decode: Sequence[Row]) -> None:
    """Time relative to torch and largest intermediate over the sweep, and time per decoded token."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullLocator

    figure = Figure(figsize=(15, 4.4), dpi=100, layout="constrained")
    ratio_axes, memory_axes, decode_axes = figure.subplots(1, 3)
    lengths = list(sweep)
    styles = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-"), ("v", "--")]
    for (marker, line), name in zip(styles, [row["name"] for row in next(iter(sweep.values()))], strict=False):
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
