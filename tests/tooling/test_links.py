"""Every relative link and image in README.md and docs/*.md points at a file in the repo."""

import re

import pytest

from grader.paths import REPO

PAGES = sorted(path for path in [REPO / "README.md", *(REPO / "docs").glob("*.md")] if path.is_file())
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
TARGETS = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|\bsrc=\"([^\"]+)\"")
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//|#)", re.IGNORECASE)


def relative_targets(text):
    """Link and image targets outside code spans, minus URLs and in-page anchors."""
    found = (first or second for first, second in TARGETS.findall(CODE.sub("", text)))
    return [target for target in found if not EXTERNAL.match(target)]


def test_the_handout_exists():
    assert REPO / "docs" / "lab.md" in PAGES


@pytest.mark.parametrize("page", PAGES, ids=[str(page.relative_to(REPO)) for page in PAGES])
def test_relative_links_resolve(page):
    broken = []
    for target in relative_targets(page.read_text()):
        path = (page.parent / target.split("#")[0].split("?")[0]).resolve()
        if REPO not in path.parents or not path.exists():
            broken.append(target)
    assert broken == [], f"{page.relative_to(REPO)} links to missing files: {broken}"


def test_targets_skip_urls_anchors_and_code():
    text = "[a](x.md) ![b](figures/y.png \"t\") [c](https://e.org) [d](#top) `[e](no.md)` <img src=\"z.png\">"
    assert relative_targets(text) == ["x.md", "figures/y.png", "z.png"]
