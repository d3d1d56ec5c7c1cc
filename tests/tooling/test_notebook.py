"""assignment/playground.ipynb is generated from grader/playground_source.py, ships without outputs,
runs cleanly on the reference and greets the untouched stubs with one-line reminders."""

import nbformat
import pytest

from grader import REPO, notebook


def committed():
    return nbformat.read(notebook.NOTEBOOK, as_version=4)


def code_outputs(executed):
    return [output for cell in executed.cells if cell.cell_type == "code" for output in cell.outputs]


def test_committed_notebook_is_the_generated_one():
    assert notebook.NOTEBOOK.read_text() == notebook.render(notebook.build()), (
        "assignment/playground.ipynb is stale: run `python -m grader.notebook build`"
    )


def test_committed_notebook_is_valid():
    nbformat.validate(committed())


def test_committed_notebook_has_no_outputs():
    cells = [cell for cell in committed().cells if cell.cell_type == "code"]
    assert cells and all(cell.outputs == [] and cell.execution_count is None for cell in cells)


def test_percent_markers_start_markdown_and_code_cells():
    kinds = [kind for kind, _ in notebook.parse_cells("header\n# %% [markdown]\n# # T\n#\n# x\n# %%\nprint(1)\n")]
    assert kinds == ["markdown", "code"]
    assert notebook.parse_cells("# %% [markdown]\n# # T\n#\n# x\n")[0][1] == "# T\n\nx"


def test_markdown_lines_without_the_comment_prefix_are_rejected():
    with pytest.raises(ValueError, match="must start with"):
        notebook.parse_cells("# %% [markdown]\nnot a comment\n")


def test_notebook_runs_without_errors_on_the_reference():
    executed = notebook.execute(REPO / "solutions")
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
