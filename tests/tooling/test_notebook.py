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


def without_self_check():
    """The committed notebook without its self-check cell, for the tests of the upload on Colab: the self-check
    grades (a cold start of the grader) and is tested on Colab by the clone test below."""
    committed_notebook = committed()
    committed_notebook.cells = committed_notebook.cells[:-1]
    return committed_notebook


def test_on_colab_the_first_cell_asks_for_attention_py_and_the_notebook_runs(tmp_path):
    for relative, text in FAKE_COLAB.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    env = {"PYTHONPATH": str(tmp_path), "FAKE_UPLOAD": str(REPO / "solutions" / "attention.py")}
    executed = notebook.execute(None, env=env, notebook=without_self_check())
    outputs = code_outputs(executed)
    assert [output for output in outputs if output.output_type == "error"] == []
    text = "".join(output.get("text", "") for output in outputs)
    assert "attention.py is ready" in text and "[skipped]" not in text


def test_on_colab_running_the_upload_cell_again_replaces_the_attention_py_there(tmp_path):
    for relative, text in FAKE_COLAB.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    env = {"PYTHONPATH": str(tmp_path), "FAKE_UPLOAD": str(REPO / "solutions" / "attention.py")}
    # the stubs are there from an earlier upload
    executed = notebook.execute(REPO / "assignment", env=env, notebook=without_self_check())
    text = "".join(output.get("text", "") for output in code_outputs(executed))
    assert "attention.py is ready" in text and "[skipped]" not in text and "not implemented yet" not in text


def test_off_colab_the_colab_cell_prints_nothing(on_the_reference):
    colab_cell = next(cell for cell in on_the_reference.cells if "google.colab" in cell.source)
    assert colab_cell.outputs == []


# -- the self-check cell: the public tests, as `make test` shows them ----------------------------------

def self_check_output(executed):
    cell = executed.cells[-1]
    assert "self_check()" in cell.source, "the self-check is the notebook's last cell"
    assert [output for output in cell.outputs if output.output_type == "error"] == []
    return "".join(output.get("text", "") for output in cell.outputs)


def table(text):
    """The summary's lines, without its first, which names the file graded (a copy, in the notebook)."""
    return [line for line in text.splitlines() if line.strip()][1:]


def test_the_self_check_shows_make_tests_table_for_the_file_beside_the_notebook(on_the_reference):
    make_test = subprocess.run([sys.executable, "-m", "grader", "grade", "--suite", "public", "--impl", "solutions"],
                               cwd=REPO, capture_output=True, text=True)
    assert make_test.returncode == 0, make_test.stderr[-2000:]
    shown = self_check_output(on_the_reference)
    assert shown.startswith("Attention from Scratch: public tests on ") and "56 / 56" in shown
    assert table(shown) == table(make_test.stdout)


def fake_git(tmp_path):
    """A `git` that only records that it was called: nothing here may reach for the network."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "git").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'git-called'}\nexit 1\n")
    (folder / "git").chmod(0o755)
    return {"PATH": f"{folder}:{os.environ['PATH']}"}


def self_check_alone():
    """The committed notebook's self-check cell on its own (it imports what it uses): for the tests of what it
    says before it grades, which need none of the cells above it (each imports torch and runs the lab)."""
    committed_notebook = committed()
    return nbformat.v4.new_notebook(cells=[committed_notebook.cells[-1]], metadata=committed_notebook.metadata)


def test_off_colab_and_outside_a_checkout_the_self_check_says_so_in_one_line_and_uses_no_network(tmp_path):
    executed = notebook.execute(REPO / "solutions", env={"LAB03_CHECKOUT": "", **fake_git(tmp_path)},
                                notebook=self_check_alone())
    shown = self_check_output(executed).strip().splitlines()
    assert len(shown) == 1 and "not in a checkout of the lab" in shown[0] and "LAB03_CHECKOUT" in shown[0]
    assert not (tmp_path / "git-called").exists()


def test_a_wrong_lab03_checkout_is_named_in_one_line(tmp_path):
    executed = notebook.execute(REPO / "solutions", env={"LAB03_CHECKOUT": str(tmp_path)}, notebook=self_check_alone())
    shown = self_check_output(executed).strip().splitlines()
    assert len(shown) == 1 and f"LAB03_CHECKOUT={tmp_path} holds no grader/" in shown[0]


def test_on_colab_the_self_check_clones_the_template_once_and_grades_the_uploaded_file(tmp_path):
    """The released template, at a local path instead of GitHub, stands for the network; removed after the
    first self-check, it proves that the second one reuses the clone."""
    from instructor import release

    origin = release.release(tmp_path / "template", github="cs-course/lab03-starter")
    played = nbformat.read(origin / "assignment" / "playground.ipynb", as_version=4)
    check = played.cells[-1]
    check.source = check.source.replace("https://github.com/cs-course/lab03-starter.git", str(origin))
    played.cells += [nbformat.v4.new_code_cell(f"import shutil; shutil.rmtree({str(origin)!r})"),
                     nbformat.v4.new_code_cell(check.source)]
    for relative, text in FAKE_COLAB.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    env = {"PYTHONPATH": str(tmp_path), "FAKE_UPLOAD": str(REPO / "solutions" / "attention.py"),
           "LAB03_CHECKOUT": "", "HOME": str(tmp_path / "home"), "PIP_NO_INDEX": "1"}
    executed = notebook.execute(None, env=env, notebook=played)
    first, second = (self_check_output(nbformat.from_dict({"cells": [cell]}))
                     for cell in (executed.cells[-3], executed.cells[-1]))
    clone = tmp_path / "home" / ".cache" / "lab03-template"
    assert first.startswith(f"[self-check] fetching the lab's public tests and grader from {origin}")
    assert second.startswith(f"[self-check] reusing the lab's tests in {clone}")
    for shown in (first, second):  # the uploaded reference, not the template's stubs
        assert "56 / 56" in shown and "installing" not in shown, shown
    assert not origin.exists() and (clone / "tests" / "public").is_dir()
