"""Dependent failures say what to fix first (tests/support/depends.py), and only then: a test whose own task is the
broken one, or whose upstream works, keeps its own message."""

import pytest

from tests.support import depends


class Fake:
    """A submission whose functions are all fine except the named ones (they return None)."""

    def __init__(self, broken=()):
        self.broken = set(broken)


@pytest.fixture
def verdicts(monkeypatch):
    def install(broken, task, upstream=None):
        submission = Fake(broken)
        monkeypatch.setattr(depends, "CHECKS", {name: (lambda s, name=name: name not in s.broken)
                                                for name in depends.FUNCTIONS})
        monkeypatch.setattr(depends, "_verdicts", {})
        monkeypatch.setattr(depends, "_current", {"task": task, "submission": submission,
                                                  "upstream": depends.UPSTREAM.get(task, ()) if upstream is None
                                                  else upstream})
    return install


def test_a_test_built_on_a_broken_function_says_to_fix_that_first(verdicts):
    verdicts({"scores"}, "efficiency")
    message = depends.first_fix("scaled_dot_product_attention at (B=2, ...): output is wrong at [0, 0]")
    assert message.startswith("fails because `attention_scores` does: fix that first")
    assert "output is wrong" not in message


def test_the_most_basic_broken_function_is_named(verdicts):
    verdicts({"sdpa", "softmax_weights"}, "mha")
    assert "`attention_weights`" in depends.first_fix("wrong")


def test_a_test_keeps_its_message_when_what_it_builds_on_works(verdicts):
    verdicts({"mha"}, "mha")
    assert depends.first_fix("mha(x) output is wrong") == "mha(x) output is wrong"
    verdicts({"heads"}, "kv_cache", upstream=())
    assert depends.first_fix("the keys returned are wrong") == "the keys returned are wrong"


def test_a_cause_appended_to_a_first_fix_line_is_dropped(verdicts):
    verdicts(set(), "mha")
    line = "fails because `attention_scores` does: fix that first."
    assert depends.first_fix(line + "\nLikely cause: the mask is inverted") == line


def test_every_task_a_test_builds_on_has_a_check():
    assert {task for tasks in depends.UPSTREAM.values() for task in tasks} <= set(depends.CHECKS)
