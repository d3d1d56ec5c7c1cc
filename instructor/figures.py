"""Attention heatmaps for docs/lab.md.

    python -m instructor figures [--impl DIR] [--out docs/figures]

DIR holds the attention.py to draw (default: solutions/). It runs in this process, so point it
only at code you trust. The PNGs are byte-for-byte reproducible with the same matplotlib version.
"""

import argparse
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import torch
from matplotlib.figure import Figure
from torch import Tensor

from grader.paths import IMPL_NAME, REPO, SOLUTIONS, find_impl

SEQ_LEN = 8
PADDING = 2  # the last PADDING positions are padding tokens
D_MODEL, N_HEADS = 16, 4
DPI = 100
PNG_METADATA = {"Software": None}  # matplotlib would stamp its version into every PNG


def load_attention(impl: str | Path) -> ModuleType:
    """The attention.py in folder (or file) impl, imported by path."""
    path = find_impl(impl)
    if path is None:
        raise FileNotFoundError(f"no {IMPL_NAME} in {impl}")
    spec = importlib.util.spec_from_file_location("attention", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mask_panels(attention: ModuleType) -> dict[str, Tensor]:
    """{title: weights [T, T]} of one head for the same q, k, v under three masks."""
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 1, SEQ_LEN, 16, generator=g, dtype=torch.float64) for _ in range(3))
    padding = torch.ones(1, 1, 1, SEQ_LEN, dtype=torch.bool)  # [B, H, Tq, Tk] broadcast
    padding[..., SEQ_LEN - PADDING:] = False
    sdpa = attention.scaled_dot_product_attention
    return {
        "bidirectional (no mask)": sdpa(q, k, v)[1][0, 0],
        "causal (is_causal=True)": sdpa(q, k, v, is_causal=True)[1][0, 0],
        f"padding (last {PADDING} keys blocked)": sdpa(q, k, v, mask=padding)[1][0, 0],
    }


def head_panels(attention: ModuleType) -> dict[str, Tensor]:
    """{title: weights [T, T]} of every head of a seeded MultiHeadAttention(D_MODEL, N_HEADS)."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        mha = attention.MultiHeadAttention(D_MODEL, N_HEADS).double()
        x = 2.0 * torch.randn(1, SEQ_LEN, D_MODEL, dtype=torch.float64)
    with torch.no_grad():
        _, weights = mha(x)  # [1, H, T, T]
    return {f"head {h}": weights[0, h] for h in range(N_HEADS)}


def heatmaps(panels: Mapping[str, Tensor], title: str) -> Figure:
    """One heatmap per panel, on a shared 0..max colour scale."""
    fig = Figure(figsize=(3.3 * len(panels) + 1, 3.8), dpi=DPI, layout="constrained")
    axes = fig.subplots(1, len(panels))
    top = max(weights.max().item() for weights in panels.values())
    for ax, (name, weights) in zip(axes, panels.items(), strict=True):
        image = ax.imshow(weights.numpy(), cmap="viridis", vmin=0.0, vmax=top)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
        ax.set_xticks(range(SEQ_LEN))
        ax.set_yticks(range(SEQ_LEN))
    fig.colorbar(image, ax=axes, label="attention weight", shrink=0.8)
    fig.suptitle(title)
    return fig


def write_figures(attention: ModuleType, out: str | Path) -> list[Path]:
    """Write attention_masks.png and multi_head_weights.png into folder out; return their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    figures = {
        "attention_masks.png": heatmaps(
            mask_panels(attention), f"The same q, k, v (one head, T={SEQ_LEN}) under three masks"
        ),
        "multi_head_weights.png": heatmaps(
            head_panels(attention), f"MultiHeadAttention(d_model={D_MODEL}, n_heads={N_HEADS}): weights per head"
        ),
    }
    paths = []
    for name, fig in figures.items():
        fig.savefig(out / name, dpi=DPI, metadata=PNG_METADATA)
        paths.append(out / name)
    return paths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--impl", default=SOLUTIONS, help="folder holding attention.py (default: solutions/)")
    parser.add_argument("--out", default=REPO / "docs" / "figures", help="output folder (default: docs/figures/)")


def run(args: argparse.Namespace) -> int:
    for path in write_figures(load_attention(args.impl), args.out):
        print(f"wrote {path}")
    return 0

