"""The mutation check's logic, on fake reports (fast). The slow full run is `make mutants`."""

import ast
import contextlib
import json
import re
from pathlib import Path

import pytest

from grader.launch import PLAIN
from grader.report import Status, TestResult, make_report
from grader.tasks import TASKS
from instructor import cli as instructor_cli
from instructor import mutants
from tests.mutants.bonus import BONUS
from tests.mutants.catalogue import CATALOGUE, Mutant
from tests.mutants.degenerate import Degenerate, StubMismatch, public_api, source

ALL = CATALOGUE + BONUS


@pytest.fixture(autouse=True)
def first_style_and_no_servers(monkeypatch):
    """The fake-backend runs below judge the first catalogue (the second style has tests of its own), start
    no warm server and grade every mutant on whole suites (the selection of test files: test_reach.py)."""
    monkeypatch.setattr(mutants, "second_style", lambda: ())
    monkeypatch.setattr(mutants, "select_files", lambda made, suites, dest: {})
    monkeypatch.setattr(mutants, "warm_launcher", lambda hide: contextlib.nullcontext(PLAIN))  # no servers for fakes
STUBS = (mutants.STUBS / "attention.py").read_text()
DEGENERATES = mutants.degenerate_submissions()
TASK_IDS = {task.id for task in TASKS}


def test_every_mutant_applies_to_the_reference_and_compiles(tmp_path):
    made = mutants.materialize(tmp_path)
    reference = mutants.REFERENCE.read_text()
    assert [m.name for m, _ in made] == [m.name for m in ALL]
    for mutant, folder in made:
        source_text = (folder / "attention.py").read_text()
        assert source_text != reference, f"{mutant.name} leaves the reference unchanged"
        compile(source_text, str(folder / "attention.py"), "exec")


def test_catalogue_entries_are_well_formed():
    names = [m.name for m in ALL]
    assert len(CATALOGUE) >= 30
    assert len(names) == len(set(names)), "mutant names must be unique"
    for m in ALL:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", m.name), m.name
        assert m.task in TASK_IDS, f"{m.name}: unknown task {m.task!r}"
        assert isinstance(m.public, bool) and m.description.strip(), m.name
        assert m.edits and all(len(edit) == 2 and edit[0] != edit[1] for edit in m.edits), m.name
        assert m.cause is None or (isinstance(m.cause, str) and m.cause.strip()), m.name


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
    ambiguous = Mutant("ambiguous", "scores", True, "old text twice", (("scale", "scale"),))
    with pytest.raises(mutants.CatalogueError, match="ambiguous.*times"):
        mutants.materialize(tmp_path, [ambiguous])


def test_the_named_floor_is_reachable_with_the_catalogued_causes():
    """Only a mutant with a `cause` can be named: removing causes must not slip under NAMED_FLOOR."""
    with_cause = sum(1 for m in ALL if m.cause is not None)
    assert with_cause / len(ALL) >= mutants.NAMED_FLOOR
    assert 0 < mutants.PUBLIC_CAUGHT_FLOOR <= 1 and 0 <= mutants.NAMED_FLOOR <= 1


# -- degenerate submissions -------------------------------------------------------------------

def signatures(text):
    """{qualified name: argument list} of the public functions and of every method."""
    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            found[node.name] = ast.unparse(node.args)
        elif isinstance(node, ast.ClassDef):
            found.update({f"{node.name}.{item.name}": ast.unparse(item.args)
                          for item in node.body if isinstance(item, ast.FunctionDef)})
    return found


def test_degenerates_have_the_stubs_api_and_compile(tmp_path):
    made = mutants.materialize_degenerates(tmp_path, DEGENERATES)
    assert len(made) >= 5
    for degenerate, folder in made:
        text = (folder / "attention.py").read_text()
        compile(text, str(folder / "attention.py"), "exec")
        assert signatures(text) == signatures(STUBS), degenerate.name
        assert "class DimensionMismatchError(ValueError)" in text
        assert "NotImplementedError" not in text, degenerate.name


def test_degenerate_names_and_allowances_are_well_formed():
    names = [d.name for d in DEGENERATES]
    assert len(names) == len(set(names))
    assert not set(names) & ({m.name for m in ALL} | {"reference", "stubs"})
    assert {"zeros", "ones", "none", "unchanged"} <= set(names)
    for degenerate in DEGENERATES:
        assert degenerate.allowed <= TASK_IDS, degenerate.name


def test_a_degenerate_that_misses_a_function_of_the_stubs_is_reported():
    incomplete = Degenerate("incomplete", "d", {"attention_scores": "return None"})
    with pytest.raises(StubMismatch, match="incomplete.*causal_mask"):
        source(incomplete, STUBS)
    assert "attention_scores" in public_api(STUBS) and "KVCache.append" in public_api(STUBS)


# -- reports: parsing, diagnoses, fractions ---------------------------------------------------

def tasks(lose=(), causes=None, earn=()):
    """One suite's fake tasks: `lose` (task ids or "all") lose every point, `earn` keep theirs, the other
    tasks lose every point when lose is "all" and none otherwise; causes: {task: [Likely cause line]}."""
    entries = {}
    for task in TASKS:
        losing = task.id in lose or (lose == "all" and task.id not in earn)
        lines = (causes or {}).get(task.id, [])
        entries[task.id] = mutants.TaskOutcome(
            lost=task.points if losing else 0, points=task.points,
            failed=[mutants.TestLine("test_x", "failed", "wrong")] if losing or lines else [],
            causes=[mutants.TestLine("test_x", "failed", line) for line in lines],
        )
    return entries


def test_likely_cause_lines_are_read_from_anywhere_in_a_message():
    message = "x is wrong at [0]: expected 1, got 2.\n  Likely cause: the scale is missing\nHint: other"
    assert mutants.likely_causes(message) == ["Likely cause: the scale is missing"]
    assert mutants.likely_causes("Hint: Likely cause: not at the start") == []
    assert mutants.likely_causes(None) == []


def test_one_report_of_both_suites_is_split_by_each_tests_suite():
    def test(suite, task, score, message=""):
        return TestResult(id=f"{suite}::{task}::{score}", name=f"test_{suite}_{task}", suite=suite, task=task,
                          score=score, max_score=2.0, status=Status.PASSED if score else Status.FAILED,
                          message=message)

    report = make_report([test("public", "scores", 0.0, "wrong\nLikely cause: no scale"), test("public", "scores", 2.0),
                          test("hidden", "scores", 2.0), test("hidden", "sdpa", 0.0, "bad")], [], "public+hidden",
                         "attention.py")
    split = mutants.split_report(report)
    assert set(split) == {"public", "hidden"}
    assert split["public"]["scores"].lost == 2.0 and split["public"]["scores"].points == 4.0
    assert split["public"]["scores"].causes == [("test_public_scores", "failed", "Likely cause: no scale")]
    assert split["hidden"]["sdpa"].failed == [("test_hidden_sdpa", "failed", "bad")]
    assert mutants.lost(split["hidden"]) == {"sdpa": 2.0}


def test_a_selection_keeps_its_files_results_and_takes_the_references_for_the_rest():
    def test(suite, file, score):
        return TestResult(id=f"x/{suite}/{file}::t", name="t", suite=suite, task="scores", score=score,
                          max_score=1.0, status=Status.PASSED if score else Status.FAILED, message="",
                          file=f"/somewhere/{suite}/{file}")

    reference = (test("public", "test_scores.py", 1.0), test("public", "test_mha.py", 1.0),
                 test("hidden", "test_scores.py", 1.0))
    selection = mutants.Selection(Path("."), frozenset({"public/test_scores.py"}), reference)
    merged = selection.merged([test("public", "test_scores.py", 0.0)])
    assert [(t.suite, Path(t.file).name, t.score) for t in merged] == [
        ("public", "test_scores.py", 0.0), ("public", "test_mha.py", 1.0), ("hidden", "test_scores.py", 1.0)]


def test_verdicts():
    public_bug = Mutant("b", "sdpa", True, "d", (("a", "b"),))
    hidden_bug = Mutant("h", "sdpa", False, "d", (("a", "b"),))
    loop = Mutant("l", "efficiency", True, "d", (("a", "b"),), exclusive=True)
    assert mutants.verdict(public_bug, tasks(["sdpa"]), tasks(["sdpa"]))[0] == "CAUGHT"
    assert mutants.verdict(public_bug, tasks(), tasks(["sdpa"]))[0] == "MISSED"
    assert mutants.verdict(public_bug, tasks(["sdpa"]), tasks(["mha"]))[0] == "MISSED"
    assert mutants.verdict(hidden_bug, tasks(), tasks(["sdpa"]))[0] == "CAUGHT"
    assert mutants.verdict(hidden_bug, tasks(), None)[0] == "n/a"
    assert mutants.verdict(loop, tasks(["efficiency"]), tasks(["efficiency"]))[0] == "CAUGHT"
    assert mutants.verdict(loop, tasks(["efficiency", "sdpa"]), tasks(["efficiency"]))[0] == "MISSED"


def test_a_mutant_is_named_by_its_own_tasks_public_line_holding_its_cause():
    bug = Mutant("b", "scores", True, "d", (("a", "b"),), cause="NOT SCALED")
    line = "Likely cause: the dot products are not scaled: multiply by 1/sqrt(d)"
    assert mutants.diagnosis(bug, tasks(["scores"], {"scores": [line]})) == (True, line)
    assert mutants.diagnosis(bug, tasks(["scores"], {"sdpa": [line]})) == (False, None)
    other = "Likely cause: other"
    assert mutants.diagnosis(bug, tasks(["scores"], {"scores": [other]})) == (False, other)
    assert mutants.diagnosis(bug, None) == (False, None)
    unnamed = Mutant("u", "scores", True, "d", (("a", "b"),))
    assert mutants.diagnosis(unnamed, tasks(["scores"], {"scores": [line]})) == (False, line)


def test_a_line_without_the_mutants_cause_in_any_suite_is_a_wrong_diagnosis():
    bug = Mutant("b", "scores", True, "d", (("a", "b"),), cause="not scaled")
    right, wrong = "Likely cause: not scaled", "Likely cause: the mask is inverted"
    graded = {"public": tasks(["scores"], {"scores": [right]}), "hidden": tasks(["scores"], {"mha": [wrong]})}
    assert mutants.wrong_diagnoses(bug, graded) == [("hidden", "test_x", wrong)]
    unnamed = Mutant("u", "scores", True, "d", (("a", "b"),))
    assert mutants.wrong_diagnoses(unnamed, graded) == []


def test_degenerates_may_earn_only_their_allowed_tasks_and_get_no_diagnosis():
    graded = {"public": tasks("all", earn=["divisibility"]), "hidden": tasks("all")}
    assert mutants.unearned_points("zeros", graded, frozenset({"divisibility"})) == []
    assert mutants.unearned_points("ones", graded) == [
        "ones earns points under public (divisibility 5), expected none"]
    assert mutants.diagnoses_of("zeros", graded) == []
    diagnosed = {"public": tasks("all", {"sdpa": ["Likely cause: x"]})}
    assert mutants.diagnoses_of("zeros", diagnosed) == [
        "WRONG DIAGNOSIS: zeros gets a Likely cause line in public/test_x: Likely cause: x"]


def row(caught_public, named, status="CAUGHT"):
    return mutants.Row(ALL[0], status, "", caught_public, named, None)


def test_fractions_count_every_mutant_and_floors_fail_below():
    rows = [row(True, True)] * 6 + [row(True, False)] * 3 + [row(False, False, "MISSED")]
    summary = mutants.fractions(rows)
    assert summary == {"mutants": 10, "public_caught": 0.9, "named": 0.6, "caught": 0.9}
    assert mutants.floor_failures(summary) == [] or mutants.NAMED_FLOOR > 0.6
    low = mutants.fractions(rows[:6] + [row(False, False)] * 4)
    assert any("catches 60.0%" in failure for failure in mutants.floor_failures(low))


# -- the command, on a fake grading backend ---------------------------------------------------

def fake_backend(outcomes):
    """A grading backend returning canned {suite: tasks} instead of running the suites.

    outcomes: {name: tasks(...) for both suites, or an Exception}; names not listed lose everything."""
    def run(folder, suites, launcher=None):
        special = {mutants.REFERENCE.parent: "reference", mutants.STUBS: "stubs"}
        name = special.get(folder, folder.name)
        outcome = outcomes.get(name, tasks("all"))
        if isinstance(outcome, Exception):
            raise outcome
        return {suite: outcome for suite in suites}
    return run


SCALE = "scores_missing_scale"


def named_bug():
    """The catalogue's first mutant, renamed `bug`, whose cause is "not scaled"."""
    return Mutant("bug", CATALOGUE[0].task, True, "d", CATALOGUE[0].edits, cause="not scaled")


def test_main_exit_code_follows_the_verdicts(monkeypatch, capsys):
    monkeypatch.setattr(mutants, "grader_suites", fake_backend({"reference": tasks(), SCALE: tasks(["scores"])}))
    assert instructor_cli.main(["mutants", "--only", SCALE]) == 0
    out = capsys.readouterr().out
    assert "1 caught, 0 missed" in out and "public suite catches 100.0% (1/1" in out

    monkeypatch.setattr(mutants, "grader_suites", fake_backend({"reference": tasks(), SCALE: tasks(["sdpa"])}))
    assert instructor_cli.main(["mutants", "--only", SCALE]) == 1
    assert f"FAIL: {SCALE} MISSED" in capsys.readouterr().out

    monkeypatch.setattr(mutants, "grader_suites", fake_backend({"reference": tasks(["mha"]), "stubs": tasks(),
                                                                SCALE: tasks(["scores"])}))
    assert instructor_cli.main(["mutants", "--only", SCALE, "--suite", "public"]) == 1
    out = capsys.readouterr().out
    assert "the reference loses points under public" in out and "the stubs earns points under public" in out

    broken = RuntimeError("no test reported a result")
    monkeypatch.setattr(mutants, "grader_suites", fake_backend({"reference": tasks(), SCALE: broken}))
    assert instructor_cli.main(["mutants", "--only", SCALE]) == 1
    assert "ERROR" in capsys.readouterr().out


def test_main_fails_on_a_wrong_diagnosis_of_a_mutant_or_a_degenerate(monkeypatch, capsys):
    monkeypatch.setattr(mutants, "catalogue", lambda: [named_bug()])
    right = tasks(["scores"], {"scores": ["Likely cause: the scores are NOT SCALED"]})
    monkeypatch.setattr(mutants, "grader_suites", fake_backend({"reference": tasks(), "bug": right}))
    assert instructor_cli.main(["mutants", "--only", "bug"]) == 0
    assert "names 100.0% (1/1" in capsys.readouterr().out

    wrong = tasks(["scores"], {"scores": ["Likely cause: the mask is inverted"]})
    monkeypatch.setattr(mutants, "grader_suites", fake_backend({"reference": tasks(), "bug": wrong}))
    assert instructor_cli.main(["mutants", "--only", "bug"]) == 1
    assert "FAIL: WRONG DIAGNOSIS: bug (cause 'not scaled')" in capsys.readouterr().out

    diagnosed = tasks("all", {"sdpa": ["Likely cause: the mask is inverted"]})
    monkeypatch.setattr(mutants, "grader_suites", fake_backend({"reference": tasks(), "zeros": diagnosed}))
    assert instructor_cli.main(["mutants", "--only", "zeros"]) == 1
    assert "FAIL: WRONG DIAGNOSIS: degenerate zeros gets a Likely cause line" in capsys.readouterr().out


def test_main_fails_when_a_degenerate_earns_a_point_it_is_not_allowed(monkeypatch, capsys):
    allowed = {"reference": tasks(), "zeros": tasks("all", earn=["divisibility"])}
    monkeypatch.setattr(mutants, "grader_suites", fake_backend(allowed))
    assert instructor_cli.main(["mutants", "--only", "zeros"]) == 0
    capsys.readouterr()
    heads_paid = {"reference": tasks(), "ones": tasks("all", earn=["heads"])}
    monkeypatch.setattr(mutants, "grader_suites", fake_backend(heads_paid))
    assert instructor_cli.main(["mutants", "--only", "ones"]) == 1
    assert "FAIL: degenerate ones earns points under public (heads 10), expected none" in capsys.readouterr().out


def test_a_whole_run_checks_the_floors(monkeypatch, capsys):
    everything_caught = {"reference": tasks(), **{m.name: tasks([m.task]) for m in ALL}}
    monkeypatch.setattr(mutants, "grader_suites", fake_backend(everything_caught))
    monkeypatch.setattr(mutants, "NAMED_FLOOR", 0.0)
    assert instructor_cli.main(["mutants"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(mutants, "NAMED_FLOOR", 0.5)
    assert instructor_cli.main(["mutants"]) == 1
    assert "below the floor of 50% (instructor/mutants.py NAMED_FLOOR)" in capsys.readouterr().out
    half_missed = {**everything_caught, **{m.name: tasks() for m in ALL[::2]}}
    monkeypatch.setattr(mutants, "grader_suites", fake_backend(half_missed))
    monkeypatch.setattr(mutants, "NAMED_FLOOR", 0.0)
    assert instructor_cli.main(["mutants", "--suite", "public"]) == 1
    assert "PUBLIC_CAUGHT_FLOOR" in capsys.readouterr().out


def test_json_carries_the_verdicts_diagnoses_degenerates_and_fractions(monkeypatch, tmp_path, capsys):
    line = "Likely cause: the dot products are not scaled"
    monkeypatch.setattr(mutants, "catalogue", lambda: [named_bug()])
    outcomes = {"reference": tasks(), "bug": tasks(["scores"], {"scores": [line]}),
                "zeros": tasks("all", earn=["divisibility"])}
    monkeypatch.setattr(mutants, "grader_suites", fake_backend(outcomes))
    out = tmp_path / "mutants.json"
    assert instructor_cli.main(["mutants", "--only", "bug", "zeros", "--json", str(out)]) == 0
    capsys.readouterr()
    report = json.loads(out.read_text())
    entry = report["mutants"][0]
    assert entry["name"] == "bug" and entry["verdict"] == "CAUGHT" and entry["caught_public"] is True
    assert entry["cause"] == "not scaled" and entry["named"] is True and entry["cause_line"] == line
    assert entry["wrong_diagnoses"] == []
    assert report["degenerates"][0]["name"] == "zeros"
    assert report["degenerates"][0]["earned"]["public"] == {"divisibility": 5}
    assert report["degenerates"][0]["problems"] == []
    assert report["summary"] == {"mutants": 1, "public_caught": 1.0, "named": 1.0, "caught": 1.0}
    assert report["floors"] == {"public_caught": mutants.PUBLIC_CAUGHT_FLOOR, "named": mutants.NAMED_FLOOR,
                                "second_style_public_caught": mutants.SECOND_STYLE_CAUGHT_FLOOR,
                                "second_style_named": mutants.SECOND_STYLE_NAMED_FLOOR}


def test_without_the_public_suite_nothing_is_named_or_counted(monkeypatch, capsys):
    line = "Likely cause: the scores are not scaled"
    monkeypatch.setattr(mutants, "catalogue", lambda: [named_bug()])
    monkeypatch.setattr(mutants, "grader_suites", fake_backend({"reference": tasks(),
                                                                "bug": tasks(["scores"], {"scores": [line]})}))
    assert instructor_cli.main(["mutants", "--only", "bug", "--suite", "hidden"]) == 0
    out = capsys.readouterr().out
    assert "Likely cause lines" not in out and "public suite catches" not in out


# -- the second style ---------------------------------------------------------------------------

def test_second_style_mutants_apply_and_are_well_formed(tmp_path):
    """At least 20 rewrites of catalogued mistakes and 10 fresh mistakes, each applying to the reference,
    public, with a cause, and named apart from the first catalogue."""
    from tests.mutants.second_style import FRESH, SECOND_STYLE

    made = mutants.materialize(tmp_path, SECOND_STYLE)
    assert len(made) == len(SECOND_STYLE)
    assert len(SECOND_STYLE) - len(FRESH) >= 20 and len(FRESH) >= 10
    assert FRESH <= {m.name for m in SECOND_STYLE}
    assert not {m.name for m in SECOND_STYLE} & {m.name for m in ALL}
    for m in SECOND_STYLE:
        assert m.public and m.cause and m.task in TASK_IDS, m.name


def test_second_style_floors_are_enforced():
    assert 0 < mutants.SECOND_STYLE_CAUGHT_FLOOR <= 1 and 0 < mutants.SECOND_STYLE_NAMED_FLOOR <= 1
    low = {"mutants": 10, "public_caught": mutants.SECOND_STYLE_CAUGHT_FLOOR - 0.01,
           "named": mutants.SECOND_STYLE_NAMED_FLOOR - 0.01, "caught": 1.0}
    assert len(mutants.second_style_floor_failures(low)) == 2
    high = dict(low, public_caught=1.0, named=1.0)
    assert mutants.second_style_floor_failures(high) == []
