"""instructor.reach: a mutant is graded on the test files that can reach its change, and only a change the
definitions hold narrows that set; what runs at import reaches every file."""

from instructor import reach

SOURCE = '''\
import math


def inner(x):
    return x * 2  # doubled


def middle(x):
    return inner(x) + 1


class Outer:
    def forward(self, x):
        return middle(x)


def apart(x, scale=1.0):
    return math.sqrt(x) * scale
'''
READS = {"public/test_inner.py": frozenset({"inner"}), "public/test_outer.py": frozenset({"Outer"}),
         "hidden/test_apart.py": frozenset({"apart"}), "hidden/test_both.py": frozenset({"apart", "middle"})}


def test_a_change_inside_a_function_names_that_function_only():
    assert reach.changed(SOURCE, SOURCE.replace("x * 2", "x * 3")) == {"inner"}


def test_comments_and_layout_are_no_change():
    assert reach.changed(SOURCE, SOURCE.replace("  # doubled", "").replace("x * 2", "x*2")) == frozenset()


def test_what_runs_at_import_reaches_every_file():
    added = "def extra(x):\n    return x\n\n\ndef apart"
    for edit in (("import math", "import math\nimport os"), ("scale=1.0", "scale=2.0"),
                 ("class Outer:", "class Outer:\n    size = 3\n"), ("def apart", added)):
        assert reach.changed(SOURCE, SOURCE.replace(*edit)) is None, edit


def test_a_change_reaches_every_definition_that_calls_it_directly_or_through_others():
    assert reach.reached(frozenset({"inner"}), SOURCE) == {"inner", "middle", "Outer"}
    assert reach.reached(frozenset({"apart"}), SOURCE) == {"apart"}


def test_a_file_is_graded_when_one_of_its_tests_reads_what_the_change_reaches():
    assert reach.files_to_grade(READS, SOURCE, SOURCE.replace("x * 2", "x * 3")) == (
        "hidden/test_both.py", "public/test_inner.py", "public/test_outer.py")
    assert reach.files_to_grade(READS, SOURCE, SOURCE.replace("math.sqrt(x)", "x")) == (
        "hidden/test_apart.py", "hidden/test_both.py")
    assert reach.files_to_grade(READS, SOURCE, SOURCE.replace("scale=1.0", "scale=2.0")) is None


def test_the_selection_holds_the_chosen_files_their_packages_and_the_suites_own_files(tmp_path):
    tests = tmp_path / "tests"
    for relative in ("conftest.py", "__init__.py", "public/__init__.py", "public/test_a.py", "public/test_b.py",
                     "hidden/__init__.py", "hidden/test_a.py", "support/helpers.py"):
        (tests / relative).parent.mkdir(parents=True, exist_ok=True)
        (tests / relative).write_text(f"# {relative}\n")
    chosen = reach.selection(tests, ["public/test_b.py"], tmp_path / "files0")
    held = sorted(path.relative_to(chosen).as_posix() for path in chosen.rglob("*") if path.is_file())
    assert held == ["__init__.py", "conftest.py", "public/__init__.py", "public/test_b.py"]
    assert (chosen / "public" / "test_b.py").read_text() == "# public/test_b.py\n"


def test_a_change_that_leaves_state_for_other_calls_reaches_every_file():
    for edit in (("return x * 2  # doubled", "global LAST\n    LAST = x\n    return x * 2"),
                 ("return x * 2  # doubled", "math.pi = 3\n    return x * 2"),
                 ("return x * 2  # doubled", "math.__dict__['pi'] = 3\n    return x * 2")):
        assert reach.changed(SOURCE, SOURCE.replace(*edit)) is None, edit
    assert reach.changed(SOURCE, SOURCE.replace("return x * 2  # doubled", "y = [x]\n    y[0] = 2\n    return y[0]")) \
        == {"inner"}


def test_a_change_of_torchs_settings_for_later_calls_reaches_every_file():
    for line in ("torch.set_grad_enabled(False)", "torch.no_grad().__enter__()", "torch.manual_seed(0)",
                 "set_default_dtype(torch.float64)"):
        edited = SOURCE.replace("return x * 2  # doubled", f"{line}\n    return x * 2")
        assert reach.changed(SOURCE, edited) is None, line


def test_a_name_defined_twice_or_definitions_reordered_reach_every_file():
    twice = SOURCE + "\n\ndef inner(x):\n    return x * 3\n"
    assert reach.changed(SOURCE, twice) is None
    moved = SOURCE.replace("class Outer:", "class Later:").replace("def apart", "class Outer:\n    pass\n\n\ndef apart")
    assert reach.changed(SOURCE, moved) is None


def test_a_file_that_reads_a_name_no_definition_has_is_always_graded():
    reads = {**READS, "public/test_alias.py": frozenset({"alias"})}
    assert "public/test_alias.py" in reach.files_to_grade(reads, SOURCE, SOURCE.replace("math.sqrt(x)", "x"))


def test_a_mutant_the_syntax_scan_refuses_is_graded_on_every_file(monkeypatch, tmp_path):
    from instructor import mutants

    reference = mutants.REFERENCE.read_text()
    reads = {"public/test_causal_mask.py": frozenset({"causal_mask"}),
             "public/test_mha.py": frozenset({"MultiHeadAttention"})}
    monkeypatch.setattr(mutants.reach, "record", lambda tests_dir, suites, impl: reads)
    made = []
    line = "    return ones.tril()\n"
    assert line in reference
    for name, edit in (("narrow", (line, line.replace("tril", "triu"))), ("refused", (line, "    eval('1')\n" + line))):
        (tmp_path / name).mkdir()
        (tmp_path / name / mutants.REFERENCE.name).write_text(reference.replace(*edit))
        made.append((mutants.Mutant(name, "causal_mask", True, "d", ()), tmp_path / name))
    assert set(mutants.select_files(made, ("public",), tmp_path / "selections")) == {"narrow"}
