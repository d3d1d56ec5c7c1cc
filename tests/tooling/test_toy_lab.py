"""The engine apart from the lab: a toy lab (tests/tooling/toylab: its lab/lab.json, a reference, stubs and two
suites) beside an unchanged copy of grader/ and instructor/ grades exactly through grade and batch; and
grader/ holds no word of lab 03 (its title, file, module, tasks, functions or what it forbids)."""

import csv
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.lab import LAB
from grader.paths import GRADER, INSTRUCTOR, REPO

TOY = Path(__file__).parent / "toylab"
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


@pytest.fixture(scope="module")
def toy_repo(tmp_path_factory) -> Path:
    """A checkout of the toy lab: its own files, this repository's grader/ and instructor/ as they are, and
    the allow-list policy of lab/ (the policy is the course's, not the lab's subject)."""
    root = tmp_path_factory.mktemp("toy") / "repo"
    shutil.copytree(TOY, root, ignore=IGNORED)
    for package in (GRADER, INSTRUCTOR):
        shutil.copytree(package, root / package.name, ignore=IGNORED)
    for name in ("allowed-use.json", "allowed-names.json"):
        shutil.copy2(LAB.folder / name, root / "lab" / name)
    return root


def grade(root: Path, impl: str, suite: str = "all") -> dict:
    result = subprocess.run([sys.executable, "-m", "grader", "grade", "--suite", suite, "--impl", impl,
                             "--format", "json"], cwd=root, capture_output=True, text=True, timeout=600)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    return json.loads(result.stdout)


def test_the_toy_reference_earns_every_point_and_its_stubs_none(toy_repo):
    reference, stubs = grade(toy_repo, "solutions"), grade(toy_repo, "assignment")
    assert (reference["score"], reference["bonus_score"]) == (100, 10), reference["tests"]
    assert (stubs["score"], stubs["bonus_score"]) == (0, 0)
    assert set(reference["tasks"]) == {"norm", "normalize", "cosine"}


def test_the_toy_labs_forbidden_kernel_costs_the_task_that_calls_it(toy_repo, tmp_path):
    (tmp_path / "vectors.py").write_text((toy_repo / "solutions" / "vectors.py").read_text().replace(
        "return (x * x).sum(dim=-1).sqrt()", "return torch.linalg.vector_norm(x, dim=-1)"))
    report = grade(toy_repo, str(tmp_path), "public")
    assert report["tasks"]["norm"]["score"] == 0 and any("torch's own norm" in flag for flag in report["flags"])


def test_a_class_of_the_toy_lab_grades_through_batch(toy_repo, tmp_path):
    for name, source in (("ada", "solutions"), ("bob", "assignment")):
        (tmp_path / "class" / name).mkdir(parents=True)
        shutil.copy2(toy_repo / source / "vectors.py", tmp_path / "class" / name / "vectors.py")
    result = subprocess.run([sys.executable, "-m", "instructor", "batch", str(tmp_path / "class"), "--output",
                             str(tmp_path / "grades.csv"), "--jobs", "1"], cwd=toy_repo, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {row["student"]: row for row in csv.DictReader((tmp_path / "grades.csv").open())}
    assert float(rows["ada"]["total"]) == 100 and float(rows["bob"]["total"]) == 0


def lab_words() -> list[str]:
    """What names lab 03 in code: its title, name, file and module, its task ids and functions, what it
    forbids (the word 'attention' stands for all of those)."""
    description = LAB.description
    words = {description["title"], description["name"], description["file"], "attention"}
    for task in description["tasks"]:
        words |= {task["id"], *task["functions"]}
    return sorted(words)


def test_grader_holds_no_word_of_the_lab():
    found = []
    for path in sorted(GRADER.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for word in lab_words():
                if re.search(rf"(?<![A-Za-z_]){re.escape(word)}(?![A-Za-z_])", line, re.IGNORECASE):
                    found.append(f"{path.relative_to(REPO)}:{number}: {word}")
    assert found == []


def test_the_toy_lab_grades_through_the_gradescope_runner(toy_repo, tmp_path):
    """gradescope-run from the toy checkout: /autograder/submission holds the reference, results.json has every
    point, in Gradescope's schema."""
    import jsonschema

    (tmp_path / "submission").mkdir()
    shutil.copy2(toy_repo / "solutions" / "vectors.py", tmp_path / "submission" / "vectors.py")
    result = subprocess.run([sys.executable, "-m", "grader", "gradescope-run", "--root", str(tmp_path)],
                            cwd=toy_repo, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    jsonschema.validate(results, json.loads((REPO / "tests/schemas/gradescope-results.schema.json").read_text()))
    assert results["score"] == sum(test["max_score"] for test in results["tests"]) == 110


def run_python(root: Path, code: str):
    """The JSON that code prints, run by python in the checkout at root."""
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_a_grade_of_some_files_outside_the_checkout_keeps_two_suites_tests_of_one_name_apart(toy_repo, tmp_path):
    tests = tmp_path / "files"
    shutil.copytree(toy_repo / "tests", tests, ignore=IGNORED)
    public = (tests / "public" / "test_vectors.py").read_text()
    assert "torch.ones(2)" in public
    (tests / "hidden" / "test_vectors.py").write_text(public.replace("torch.ones(2)", "torch.zeros(2)"))
    results = run_python(toy_repo, "import json; from grader.grade import grade; "
                                   f"report = grade('solutions', 'all', tests_dir={str(tests)!r}, partial=True); "
                                   "print(json.dumps([[t.suite, t.name, t.passed] for t in report.tests]))")
    cosine = "test_cosine_of_a_vector_with_itself_is_one"
    assert ["public", cosine, True] in results and ["hidden", cosine, False] in results, results


def test_the_toy_labs_test_files_record_the_names_they_read(toy_repo):
    read = run_python(toy_repo, "import json; from instructor import reach; "
                                "from grader.paths import SOLUTION_FILE, TESTS; "
                                "print(json.dumps({f: sorted(n) for f, n in "
                                "reach.record(TESTS, ('public', 'hidden'), SOLUTION_FILE).items()}))")
    assert read == {"public/test_vectors.py": ["cosine", "norm", "normalize"],
                    "hidden/test_vectors.py": ["cosine", "norm", "normalize"]}
