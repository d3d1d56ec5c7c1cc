"""assignment/playground.ipynb, built by jupytext from instructor/playground_source.py.

The source is a jupytext percent-format script paired with the notebook ([tool.jupytext] in
pyproject.toml, so that the students' notebook carries no jupytext metadata): "# %% [markdown]" starts a
text cell, "# %%" a code cell. Edit the script, or edit the notebook in Jupyter; then `jupytext --sync`
either file (from the repository's root) updates the other, and `build` rewrites the notebook without
outputs or metadata. The notebook calls only the student's attention.py and torch: no solution code goes
into the source.

    python -m instructor notebook build          write the notebook (no outputs)
    python -m instructor notebook check          exit 1 if the committed notebook is stale
    python -m instructor notebook run [--impl D] execute it headless against D/attention.py (default: solutions/)

`run` copies D/attention.py into a temporary folder and executes the notebook there, with the
IPython kernel of this Python (no registered kernelspec needed), so `import attention` in the
notebook picks up that copy.
"""

import argparse
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import jupytext
import nbformat
from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from grader.paths import ASSIGNMENT, IMPL_NAME, INSTRUCTOR, REPO, SOLUTIONS, find_impl

SOURCE = INSTRUCTOR / "playground_source.py"
CHECKOUT_VARIABLE = "LAB03_CHECKOUT"  # the self-check cell grades with the checkout it names
NOTEBOOK = ASSIGNMENT / "playground.ipynb"
METADATA = {
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
}


def build() -> nbformat.NotebookNode:
    """The notebook as jupytext reads the source, with stable cell ids and no jupytext metadata, so that
    rebuilding gives the same bytes and the student's copy is a plain notebook."""
    notebook = jupytext.read(SOURCE, fmt="py:percent")
    for index, cell in enumerate(notebook.cells):
        cell.id = f"cell-{index:02d}"
        cell.metadata.pop("lines_to_next_cell", None)  # jupytext's blank-line bookkeeping
    notebook.metadata = nbformat.from_dict(METADATA)
    return notebook


def render(notebook: nbformat.NotebookNode) -> str:
    """The notebook's file text, as committed."""
    return nbformat.writes(notebook) + "\n"


def execute(impl: str | Path | None, timeout: int = 300, env: Mapping[str, str] | None = None,
            notebook: nbformat.NotebookNode | None = None) -> nbformat.NotebookNode:
    """The committed notebook (or the one given), executed in a new folder holding a copy of the
    attention.py in folder (or file) impl; impl=None leaves the folder empty, as on Colab. Its self-check
    cell grades with this checkout (LAB03_CHECKOUT), so no run here reaches for the network. env: extra
    environment variables for the kernel. Raises nbclient's CellExecutionError when a cell fails."""
    notebook = notebook if notebook is not None else nbformat.read(NOTEBOOK, as_version=4)
    this_python = KernelSpecManager(kernel_dirs=[])  # falls back to ipykernel on sys.executable
    kernel = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=this_python)
    with tempfile.TemporaryDirectory() as folder:
        if impl is not None:
            source = find_impl(impl)
            if source is None:
                raise FileNotFoundError(f"no {IMPL_NAME} in {impl}")
            shutil.copy(source, Path(folder) / IMPL_NAME)
        client = NotebookClient(notebook, km=kernel, timeout=timeout, resources={"metadata": {"path": folder}})
        client.execute(cleanup_kc=True, env={**os.environ, CHECKOUT_VARIABLE: str(REPO), **(env or {})})
    return notebook


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("build", "check", "run"))
    parser.add_argument("--impl", default=SOLUTIONS, help="for run: folder holding attention.py (default: solutions/)")


def run(args: argparse.Namespace) -> int:
    if args.action == "build":
        NOTEBOOK.write_text(render(build()))
        print(f"wrote {NOTEBOOK}")
    elif args.action == "check":
        if not NOTEBOOK.is_file() or NOTEBOOK.read_text() != render(build()):
            print(f"{NOTEBOOK} is stale: run `python -m instructor notebook build`")
            return 1
        print(f"{NOTEBOOK} is up to date")
    else:
        execute(args.impl)
        print(f"{NOTEBOOK.name} ran without errors against {args.impl}")
    return 0

