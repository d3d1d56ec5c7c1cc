"""Benchmarks of the reference (instructors): attention at the lab's shape and over sequence lengths,
and decoding with and without a KV cache.

    python -m instructor bench [--quick] [--write | --no-write]

measure.py times and tracks memory (the lab's shape in one child process per allocator), report.py turns
the rows into tables, docs/benchmarks.md (from page.md) and docs/figures/benchmarks.png, cli.py runs both.
Everything runs with torch.set_num_threads(2), under torch.no_grad(). Writes the page and the plot unless
--no-write; `--quick` measures the lab's shape, T = 4096 and two decoding lengths, in under a minute on
2 cores, and only prints (add --write to write its figures into docs/ as well).
"""
