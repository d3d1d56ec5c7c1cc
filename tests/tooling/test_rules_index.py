"""The handout's rules are all tested: every rule, warning and stated edge case of docs/lab.md carries an anchor
(<a id="rule-...">), and tests/rules.json maps each one to the public test that checks it and the hidden test that
re-checks it on other inputs. A rule without a public test, or a listed test that does not exist, fails here."""

import ast
import json
import re

import pytest

from grader.paths import REPO

HANDOUT = REPO / "docs" / "lab.md"
INDEX = json.loads((REPO / "tests" / "rules.json").read_text())["rules"]
ANCHORS = re.findall(r'<a id="(rule-[a-z0-9-]+)"></a>', HANDOUT.read_text())


def defined_tests(path):
    """The names of the test functions a suite file defines (read, not imported)."""
    tree = ast.parse((REPO / path).read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_anchor_is_unique_and_indexed_and_every_entry_is_an_anchor():
    assert ANCHORS and len(ANCHORS) == len(set(ANCHORS)), "an anchor is used twice in docs/lab.md"
    assert sorted(set(ANCHORS) - set(INDEX)) == [], "rules of the handout missing from tests/rules.json"
    assert sorted(set(INDEX) - set(ANCHORS)) == [], "tests/rules.json lists rules the handout does not anchor"


@pytest.mark.parametrize("rule", sorted(INDEX))
def test_each_rule_has_an_existing_public_and_hidden_test(rule):
    for suite in ("public", "hidden"):
        test_id = INDEX[rule].get(suite)
        assert test_id, f"{rule} has no {suite} test"
        path, _, name = test_id.partition("::")
        assert path.startswith(f"tests/{suite}/test_") and path.endswith(".py"), f"{rule}: {test_id} is not a {suite} test"
        assert (REPO / path).is_file(), f"{rule}: {path} does not exist"
        assert name in defined_tests(path), f"{rule}: {path} has no test {name}"


def test_the_public_and_hidden_tests_of_a_rule_count_for_the_same_task():
    for rule, entry in INDEX.items():
        tasks = {entry[suite].split("::")[0].rsplit("/test_", 1)[1].removesuffix(".py") for suite in ("public", "hidden")}
        assert len(tasks) == 1, f"{rule}: its public and hidden tests belong to different tasks {sorted(tasks)}"


def points_by_suite():
    """{task: {suite: points}} from the collected suites."""
    from grader.run import collect_manifest, suite_paths

    names, tests_dir = suite_paths("all")
    found = {}
    for test in collect_manifest(tests_dir, names, tests_dir.parent / "solutions"):
        found.setdefault(test.task, {"public": 0.0, "hidden": 0.0})[test.suite] += test.points
    return found


def test_the_handout_s_task_table_shows_the_public_and_hidden_points_make_test_shows():
    from grader.tasks import TASKS

    points = points_by_suite()
    text = HANDOUT.read_text()
    for task in TASKS:
        public, hidden = points[task.id]["public"], points[task.id]["hidden"]
        if task.bonus:
            heading = f"### `{task.id}` ({task.points} bonus points: {public:g} public, {hidden:g} hidden)"
            assert heading in text, f"docs/lab.md should say: {heading}"
        else:
            row = f"| `{task.id}` | {task.points} | {public:g} | {hidden:g} |"
            assert row in text, f"docs/lab.md's task table should have the row {row} ..."
    core = [task.id for task in TASKS if not task.bonus]
    total = (f"| **total** | **100** | **{sum(points[t]['public'] for t in core):g}** | "
             f"**{sum(points[t]['hidden'] for t in core):g}** |")
    assert total in text, f"docs/lab.md's task table should end with {total}"
