"""assignment/playground.ipynb is generated from instructor/playground_source.py, ships without outputs,
runs cleanly on the reference and greets the untouched stubs with one-line reminders."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest
import tomllib
from jupytext.paired_paths import paired_paths

from grader.paths import REPO
from instructor import notebook

FAKE_COLAB = {
    "google/__init__.py": "",
    "google/colab/__init__.py": "",
    "google/colab/files.py": (
        "import os, shutil\n"
        "def upload():\n"
        "    shutil.copy(os.environ['FAKE_UPLOAD'], 'attention (1).py')\n"
        "    return {'attention (1).py': open('attention (1).py', 'rb').read()}\n"
    ),
}


def committed():
    return nbformat.read(notebook.NOTEBOOK, as_version=4)


def code_outputs(executed):
    return [output for cell in executed.cells if cell.cell_type == "code" for output in cell.outputs]


def test_committed_notebook_is_the_generated_one():
    assert notebook.NOTEBOOK.read_text() == notebook.render(notebook.build()), (
        "assignment/playground.ipynb is stale: run `python -m instructor notebook build`"
    )


def test_committed_notebook_is_valid():
    nbformat.validate(committed())


def test_committed_notebook_has_no_outputs():
    cells = [cell for cell in committed().cells if cell.cell_type == "code"]
    assert cells and all(cell.outputs == [] and cell.execution_count is None for cell in cells)


def jupytext_formats():
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["jupytext"]["formats"]


def test_the_source_is_a_jupytext_percent_script_paired_with_the_notebook():
    source = jupytext.read(notebook.SOURCE, fmt="py:percent")
    for path, fmt in ((notebook.NOTEBOOK, "ipynb"), (notebook.SOURCE, "py:percent")):
        pairs = paired_paths(str(path.relative_to(REPO)), fmt, jupytext_formats())
        assert [(REPO / path).resolve() for path, _ in pairs] == [notebook.NOTEBOOK, notebook.SOURCE]
    assert [cell.source for cell in source.cells] == [cell.source for cell in committed().cells]


def sync(tree, relative):
    result = subprocess.run([str(Path(sys.executable).parent / "jupytext"), "--sync", relative], cwd=tree,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def edit(path, old, new):
    path.write_text(path.read_text().replace(old, new, 1))
    later = path.stat().st_mtime + 10  # the newer file of a pair is the one jupytext reads
    os.utime(path, (later, later))


def test_jupytext_sync_from_either_file_carries_an_edit_to_the_other_and_writes_no_third_file(tmp_path):
    for relative in ("pyproject.toml", "instructor/playground_source.py", "assignment/playground.ipynb"):
        (tmp_path / relative).parent.mkdir(exist_ok=True)
        shutil.copy2(REPO / relative, tmp_path / relative)
    title = "Lab 03 playground: look inside your attention"
    edit(tmp_path / "assignment/playground.ipynb", title, "Edited in Jupyter")
    sync(tmp_path, "assignment/playground.ipynb")
    assert "# # Edited in Jupyter" in (tmp_path / "instructor/playground_source.py").read_text()
    edit(tmp_path / "instructor/playground_source.py", "Edited in Jupyter", "Edited in the script")
    sync(tmp_path, "instructor/playground_source.py")
    assert "Edited in the script" in (tmp_path / "assignment/playground.ipynb").read_text()
    assert sorted(p.name for p in (tmp_path / "instructor").iterdir()) == ["playground_source.py"]
    assert sorted(p.name for p in (tmp_path / "assignment").iterdir()) == ["playground.ipynb"]


def test_the_student_notebook_carries_no_jupytext_metadata():
    assert "jupytext" not in committed().metadata
    assert all("lines_to_next_cell" not in cell.metadata for cell in committed().cells)


@pytest.fixture(scope="module")
def on_the_reference():
    return notebook.execute(REPO / "solutions")


def test_notebook_runs_without_errors_on_the_reference(on_the_reference):
    executed = on_the_reference
    text = "".join(output.get("text", "") for output in code_outputs(executed))
    assert "[skipped]" not in text
    assert "DimensionMismatchError" in text


def test_notebook_on_the_stubs_prints_one_line_reminders_and_no_traceback():
    executed = notebook.execute(REPO / "assignment")
    outputs = code_outputs(executed)
    assert [output for output in outputs if output.output_type == "error"] == []
    text = "".join(output.get("text", "") for output in outputs)
    assert "not implemented yet" in text and "Traceback" not in text
    for cell in executed.cells:
        if cell.cell_type == "code" and "your_code()" in cell.source and "def your_code" not in cell.source:
            printed = "".join(output.get("text", "") for output in cell.outputs).strip().splitlines()
            assert len(printed) >= 1 and printed[-1].startswith("[skipped]"), cell.source


def test_on_colab_the_first_cell_asks_for_attention_py_and_the_notebook_runs(tmp_path):
    for relative, text in FAKE_COLAB.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    env = {"PYTHONPATH": str(tmp_path), "FAKE_UPLOAD": str(REPO / "solutions" / "attention.py")}
    executed = notebook.execute(None, env=env)
    outputs = code_outputs(executed)
    assert [output for output in outputs if output.output_type == "error"] == []
    text = "".join(output.get("text", "") for output in outputs)
    assert "attention.py is ready" in text and "[skipped]" not in text


def test_on_colab_running_the_upload_cell_again_replaces_the_attention_py_there(tmp_path):
    for relative, text in FAKE_COLAB.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    env = {"PYTHONPATH": str(tmp_path), "FAKE_UPLOAD": str(REPO / "solutions" / "attention.py")}
    executed = notebook.execute(REPO / "assignment", env=env)  # the stubs are there from an earlier upload
    text = "".join(output.get("text", "") for output in code_outputs(executed))
    assert "attention.py is ready" in text and "[skipped]" not in text and "not implemented yet" not in text


def test_off_colab_the_colab_cell_prints_nothing(on_the_reference):
    colab_cell = next(cell for cell in on_the_reference.cells if "google.colab" in cell.source)
    assert colab_cell.outputs == []
