"""`python -m instructor bench`: measure, print the tables, write docs/benchmarks.md and its plot."""

import argparse
import json
import time
from collections.abc import Iterable

from grader.paths import REPO, SOLUTIONS

OUT_MD = REPO / "docs" / "benchmarks.md"
OUT_PNG = REPO / "docs" / "figures" / "benchmarks.png"
QUICK_SWEEP_NAMES = ("reference", "tiled_attention", "torch SDPA")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="fewer shapes and repeats (under a minute)")
    parser.add_argument("--write", action=argparse.BooleanOptionalAction, default=None,
                        help="write docs/benchmarks.md and its plot (default: yes, except with --quick)")
    parser.add_argument("--lab-shape-json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=5, help=argparse.SUPPRESS)


def print_section(title: str, lines: Iterable[str]) -> None:
    print(f"\n{title}")
    for line in lines:
        print("  " + line)


def run(args: argparse.Namespace) -> int:
    import torch

    from instructor.bench import measure, report
    from instructor.figures import load_attention

    torch.set_num_threads(measure.THREADS)
    sol = load_attention(SOLUTIONS)
    compared = measure.implementations(sol)
    if args.lab_shape_json:  # the child process of measure.lab_rows_by_allocator
        print(json.dumps(measure.attention_rows(measure.LAB_SHAPE, compared, args.repeats)))
        return 0
    write = (not args.quick) if args.write is None else args.write
    env = measure.environment()
    started = time.perf_counter()
    print(f"torch {env['torch']}, {env['threads']} threads, {env['cpu']}, load {env['load']:.1f}, "
          f"THP_MEM_ALLOC_ENABLE={env['thp']}", flush=True)
    lab = measure.lab_rows_by_allocator(3 if args.quick else 5)
    print_section(f"causal attention at (B, H, T, d) = {measure.LAB_SHAPE}, float32",
                  report.format_attention_table(lab))
    swept = {name: compared[name] for name in (QUICK_SWEEP_NAMES if args.quick else compared)
             if name != measure.NEW_TENSOR}
    sweep = {}
    for length in measure.QUICK_SWEEP if args.quick else measure.SWEEP:
        sweep[length] = measure.attention_rows(measure.sweep_shape(length), swept, 3)
        print(f"  swept T = {length} ({time.perf_counter() - started:.0f} s)", flush=True)
    print_section("sweep (B * H * T^2 constant, d = 64)", report.format_sweep_table(sweep))
    lengths = measure.QUICK_DECODE_LENGTHS if args.quick else measure.DECODE_LENGTHS
    decode = measure.decode_rows(sol, lengths, 15 if args.quick else 31)
    print_section(f"decoding with MultiHeadAttention({measure.D_MODEL}, {measure.N_HEADS}), B = 1",
                  report.format_decode_table(decode))

    figures = report.summary(lab, sweep, decode)
    print_section("summary", report.verdicts(figures))
    if env["load"] > 1.0:
        print(f"\nwarning: the load average was {env['load']:.1f} before the run: other processes competed for the "
              "cores, so the times (of small operations most) are noisy")
    if write:
        report.write_page(OUT_MD, env, lab, sweep, decode, figures, args.quick)
        report.draw(OUT_PNG, sweep, decode)
        print(f"\nwrote {OUT_MD.relative_to(REPO)} and {OUT_PNG.relative_to(REPO)}")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0
