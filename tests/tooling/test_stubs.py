"""The student stubs are generated from the reference and never carry solution code."""

import pytest

from instructor import stubs


def test_committed_stubs_are_generated_from_the_reference():
    expected = stubs.make_stub(stubs.SOLUTION_FILE.read_text())
    assert stubs.STUB_FILE.read_text() == expected, "assignment/attention.py is stale: run `make stubs`"


def test_stubs_hold_no_solution_line():
    assert stubs.leaked_lines(stubs.STUB_FILE.read_text(), stubs.SOLUTION_FILE.read_text()) == []


def test_each_solution_block_becomes_a_not_implemented_error_named_after_its_function():
    source = "def f(x):\n    # TODO: hint\n    # BEGIN SOLUTION\n    return x\n    # END SOLUTION\n"
    assert stubs.make_stub(source) == (
        "def f(x):\n    # TODO: hint\n    raise NotImplementedError(\"f is not implemented yet\")\n"
    )


def test_methods_are_named_with_their_class():
    source = "class A:\n    def g(self):\n        # BEGIN SOLUTION\n        return 1\n        # END SOLUTION\n"
    assert 'raise NotImplementedError("A.g is not implemented yet")' in stubs.make_stub(source)


@pytest.mark.parametrize("source", [
    "def f():\n    # BEGIN SOLUTION\n    return 1\n",
    "def f():\n    return 1\n    # END SOLUTION\n",
    "def f():\n    # BEGIN SOLUTION\n    # BEGIN SOLUTION\n    # END SOLUTION\n",
])
def test_unbalanced_markers_are_rejected(source):
    with pytest.raises(stubs.MarkerError):
        stubs.make_stub(source)
