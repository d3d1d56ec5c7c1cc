"""assignment/playground.ipynb, generated from grader/playground_source.py.

    python -m grader.notebook build          write the notebook (no outputs)
    python -m grader.notebook check          exit 1 if the committed notebook is stale
    python -m grader.notebook run [--impl D] execute it headless against D/attention.py (default: solutions/)

`run` copies D/attention.py into a temporary folder and executes the notebook there, with the
IPython kernel of this Python (no registered kernelspec needed), so `import attention` in the
notebook picks up that copy.
"""

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

from grader import REPO

SOURCE = REPO / "grader" / "playground_source.py"
NOTEBOOK = REPO / "assignment" / "playground.ipynb"
METADATA = {
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
}


def parse_cells(text):
    """[(kind, source)] from percent-format text; anything before the first "# %%" is a header."""
    pieces = re.split(r"^# %%(.*)$", text, flags=re.MULTILINE)  # header, marker, body, marker, body...
    cells = []
    for marker, body in zip(pieces[1::2], pieces[2::2]):
        kind = "markdown" if marker.strip() == "[markdown]" else "code"
        lines = body.strip("\n").splitlines()
        if kind == "markdown":
            if not all(line.startswith("# ") or line == "#" for line in lines):
                raise ValueError(f"markdown cell lines must start with '# ':\n{body}")
            lines = [line[2:] for line in lines]
        cells.append((kind, "\n".join(lines).strip("\n")))
    return cells


def build():
    """The notebook, with stable cell ids so that rebuilding gives the same bytes."""
    new_cell = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    cells = [
        new_cell[kind](source, id=f"cell-{index:02d}")
        for index, (kind, source) in enumerate(parse_cells(SOURCE.read_text()))
    ]
    return nbformat.v4.new_notebook(cells=cells, metadata=METADATA)


def render(notebook):
    return nbformat.writes(notebook) + "\n"


def execute(impl, timeout=300):
    """The committed notebook, executed against the attention.py in folder (or file) impl.
    Raises nbclient's CellExecutionError when a cell fails."""
    impl = Path(impl)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    this_python = KernelSpecManager(kernel_dirs=[])  # falls back to ipykernel on sys.executable
    kernel = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=this_python)
    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(impl / "attention.py" if impl.is_dir() else impl, Path(folder) / "attention.py")
        client = NotebookClient(notebook, km=kernel, timeout=timeout, resources={"metadata": {"path": folder}})
        client.execute(cleanup_kc=True)
    return notebook


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader.notebook", description="Build, check or run the playground.")
    parser.add_argument("command", choices=("build", "check", "run"))
    parser.add_argument("--impl", default=REPO / "solutions", help="for run: folder holding attention.py (default: solutions/)")
    args = parser.parse_args(argv)
    if args.command == "build":
        NOTEBOOK.write_text(render(build()))
        print(f"wrote {NOTEBOOK}")
    elif args.command == "check":
        if not NOTEBOOK.is_file() or NOTEBOOK.read_text() != render(build()):
            print(f"{NOTEBOOK} is stale: run `python -m grader.notebook build`")
            return 1
        print(f"{NOTEBOOK} is up to date")
    else:
        execute(args.impl)
        print(f"{NOTEBOOK.name} ran without errors against {args.impl}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
