"""The heatmaps in docs/figures/ are drawn by instructor/figures.py from the reference."""

import pytest
import torch

from grader.paths import REPO
from instructor import figures

NAMES = ("attention_masks.png", "multi_head_weights.png")


@pytest.fixture(scope="module")
def reference():
    return figures.load_attention(REPO / "solutions")


@pytest.fixture(scope="module")
def drawn(reference, tmp_path_factory):
    out = tmp_path_factory.mktemp("figures")
    figures.write_figures(reference, out)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_each_figure_is_written_as_a_png(drawn, name):
    assert (drawn / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_causal_panel_is_exactly_zero_above_the_diagonal(reference):
    causal = next(weights for title, weights in figures.mask_panels(reference).items() if "causal" in title)
    future = ~torch.ones_like(causal, dtype=torch.bool).tril()
    assert causal[future].eq(0).all(), f"causal weights above the diagonal: {causal[future]}"
    assert causal[~future].gt(0).all()


def test_padding_panel_gives_padding_keys_no_weight(reference):
    padding = next(weights for title, weights in figures.mask_panels(reference).items() if "padding" in title)
    assert padding[:, -figures.PADDING:].eq(0).all()
    torch.testing.assert_close(padding.sum(dim=-1), torch.ones(figures.SEQ_LEN, dtype=padding.dtype))


@pytest.mark.parametrize("name", NAMES)
def test_committed_figure_is_what_the_reference_draws(drawn, name):
    committed = REPO / "docs" / "figures" / name
    assert committed.read_bytes() == (drawn / name).read_bytes(), f"{committed} is stale: run `make figures`"
