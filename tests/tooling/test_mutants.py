"""The mutant catalogue still applies to the reference (fast). The slow full run is `make mutants`."""

import re

import pytest

from grader import mutants
from grader.tasks import TASKS
from tests.mutants.bonus import BONUS
from tests.mutants.catalogue import CATALOGUE, Mutant

ALL = CATALOGUE + BONUS


def test_every_mutant_applies_to_the_reference_and_compiles(tmp_path):
    made = mutants.materialize(tmp_path)
    reference = mutants.REFERENCE.read_text()
    assert [m.name for m, _ in made] == [m.name for m in ALL]
    for mutant, folder in made:
        source = (folder / "attention.py").read_text()
        assert source != reference, f"{mutant.name} leaves the reference unchanged"
        compile(source, str(folder / "attention.py"), "exec")


def test_catalogue_entries_are_well_formed():
    task_ids = {task.id for task in TASKS}
    names = [m.name for m in ALL]
    assert len(CATALOGUE) >= 30
    assert len(names) == len(set(names)), "mutant names must be unique"
    for m in ALL:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", m.name), m.name
        assert m.task in task_ids, f"{m.name}: unknown task {m.task!r}"
        assert isinstance(m.public, bool) and m.description.strip(), m.name
        assert m.edits and all(len(edit) == 2 and edit[0] != edit[1] for edit in m.edits), m.name


def test_every_core_task_has_mutants_and_some_the_public_suite_must_catch():
    for task in TASKS:
        if task.bonus:
            continue
        assert any(m.task == task.id for m in ALL), f"no mutant targets task {task.id}"
    public_tasks = {m.task for m in CATALOGUE if m.public}
    assert public_tasks >= {t.id for t in TASKS if not t.bonus}, "every task needs a public mutant"


def test_a_rotten_edit_is_reported_by_name(tmp_path):
    rotten = Mutant("rotten", "scores", True, "old text gone", (("no such text in the file", "x"),))
    with pytest.raises(mutants.CatalogueError, match="rotten.*occurs 0 times"):
        mutants.materialize(tmp_path, [rotten])
    ambiguous = Mutant("ambiguous", "scores", True, "old text twice", (("def ", "def  "),))
    with pytest.raises(mutants.CatalogueError, match="ambiguous.*times"):
        mutants.materialize(tmp_path, [ambiguous])


def test_verdicts():
    def tasks(**lost):
        return {task.id: {"lost": lost.get(task.id, 0), "points": task.points, "failed": []} for task in TASKS}

    public_bug = Mutant("b", "sdpa", True, "d", (("a", "b"),))
    hidden_bug = Mutant("h", "sdpa", False, "d", (("a", "b"),))
    loop = Mutant("l", "efficiency", True, "d", (("a", "b"),), exclusive=True)
    assert mutants.verdict(public_bug, tasks(sdpa=2), tasks(sdpa=1))[0] == "CAUGHT"
    assert mutants.verdict(public_bug, tasks(), tasks(sdpa=1))[0] == "MISSED"
    assert mutants.verdict(public_bug, tasks(sdpa=2), tasks(mha=1))[0] == "MISSED"
    assert mutants.verdict(hidden_bug, tasks(), tasks(sdpa=1))[0] == "CAUGHT"
    assert mutants.verdict(hidden_bug, tasks(), None)[0] == "n/a"
    assert mutants.verdict(loop, tasks(efficiency=4), tasks(efficiency=3))[0] == "CAUGHT"
    assert mutants.verdict(loop, tasks(efficiency=4, sdpa=1), tasks(efficiency=3))[0] == "MISSED"


def fake_backend(outcomes):
    """A grading backend that returns canned results instead of running the suites."""
    def run(folder, suite):
        name = "reference" if folder == mutants.REFERENCE.parent else "stubs" if folder == mutants.STUBS else folder.name
        outcome = outcomes[name]
        if isinstance(outcome, Exception):
            raise outcome
        return {task.id: {"lost": task.points if outcome in ("all", task.id) else 0, "points": task.points,
                          "failed": []} for task in TASKS}
    return run


def test_main_exit_code_follows_the_verdicts(monkeypatch, capsys):
    name = "scores_missing_scale"
    monkeypatch.setattr(mutants, "grader_tasks", fake_backend({"reference": None, "stubs": "all", name: "scores"}))
    assert mutants.main(["--only", name]) == 0
    assert "1 caught, 0 missed" in capsys.readouterr().out

    monkeypatch.setattr(mutants, "grader_tasks", fake_backend({"reference": None, "stubs": "all", name: "sdpa"}))
    assert mutants.main(["--only", name]) == 1
    assert "FAIL: scores_missing_scale MISSED" in capsys.readouterr().out

    monkeypatch.setattr(mutants, "grader_tasks", fake_backend({"reference": "mha", "stubs": None, name: "scores"}))
    assert mutants.main(["--only", name, "--suite", "public"]) == 1
    out = capsys.readouterr().out
    assert "the reference loses points under public" in out and "the stubs score" in out

    broken = RuntimeError("no test reported a result")
    monkeypatch.setattr(mutants, "grader_tasks", fake_backend({"reference": None, "stubs": "all", name: broken}))
    assert mutants.main(["--only", name]) == 1
    assert "ERROR" in capsys.readouterr().out
