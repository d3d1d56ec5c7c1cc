"""The student template: what ships, what never ships, and that it works as a student starts it."""

import os
import subprocess

import pytest

from grader.paths import REPO
from instructor import release
from instructor.stubs import SOLUTION_FILE, solution_snippets


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return release.release(tmp_path_factory.mktemp("template") / "student")


def files(tree):
    return {str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() and ".git" not in p.relative_to(tree).parts}


def test_template_has_what_a_student_needs(template):
    assert {"assignment/attention.py", "assignment/playground.ipynb", "Makefile", "README.md", "requirements.txt", "requirements-notebook.txt",
            ".github/workflows/classroom.yml", "docs/lab.md", "grader/sandbox/worker.py", "tests/conftest.py",
            "tests/public/test_sdpa.py", "tests/support/oracle.py"} <= files(template)


def test_template_has_no_solutions_hidden_tests_or_mutants(template):
    shipped = files(template)
    assert not [f for f in shipped if f.startswith(("solutions/", "tests/hidden/", "tests/mutants/", "tests/tooling/"))]
    assert "requirements-dev.txt" not in shipped and "docs/instructors.md" not in shipped


def test_no_solution_line_anywhere_in_the_template(template):
    assert release.scan(template) == []
    assert len(solution_snippets(SOLUTION_FILE.read_text())) > 20, "the scan must have lines to look for"


def test_scan_finds_a_planted_solution_line(tmp_path):
    line = solution_snippets(SOLUTION_FILE.read_text())[0]
    (tmp_path / "notes.txt").write_text(f"    {line}\n")
    assert release.scan(tmp_path) == [("notes.txt", line)]


def test_template_is_one_commit_with_no_history(template):
    log = subprocess.run(["git", "log", "--oneline", "main"], cwd=template, capture_output=True, text=True, check=True)
    assert len(log.stdout.strip().splitlines()) == 1


def test_template_is_left_on_main_with_the_stubs(template):
    branch = subprocess.run(["git", "branch", "--show-current"], cwd=template, capture_output=True, text=True)
    assert branch.stdout.strip() == "main"
    assert (template / "assignment" / "attention.py").read_text() == (REPO / "assignment" / "attention.py").read_text()


def test_the_solutions_branch_changes_only_attention_py_and_scores_full_marks(template, tmp_path):
    changed = subprocess.run(["git", "diff", "--name-only", "main", release.SOLUTIONS_BRANCH], cwd=template,
                             capture_output=True, text=True, check=True).stdout.split()
    assert changed == ["assignment/attention.py"]
    checkout = tmp_path / "solutions"
    subprocess.run(["git", "clone", "-q", "-b", release.SOLUTIONS_BRANCH, str(template), str(checkout)], check=True)
    os.symlink(REPO / ".venv", checkout / ".venv")
    result = subprocess.run(["make", "test"], cwd=checkout, capture_output=True, text=True)
    assert result.returncode == 0, "make test exits 0 only for full marks:\n" + result.stdout[-3000:]


def test_template_makefile_has_no_instructor_targets(template):
    makefile = (template / "Makefile").read_text()
    assert "solutions" not in makefile and "mutants" not in makefile
    assert "\ntest:" in makefile and "\ninstall:" in makefile


def test_make_test_in_the_template_scores_zero_with_not_implemented_yet(template):
    os.symlink(REPO / ".venv", template / ".venv")
    install = subprocess.run(["make", "install"], cwd=template, capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-2000:]
    result = subprocess.run(["make", "test"], cwd=template, capture_output=True, text=True)
    assert result.returncode != 0, "make test on the stubs fails by design"
    assert "total" in result.stdout and " 0 / " in result.stdout
    rows = [line for line in result.stdout.splitlines() if " / " in line and line.strip().split(" ")[0] in
            ("scores", "causal_mask", "softmax_weights", "sdpa", "heads", "divisibility", "mha", "efficiency")]
    assert len(rows) == 8 and all("not implemented yet" in row for row in rows), result.stdout


def test_the_colab_links_open_the_named_repository(tmp_path):
    tree = release.release(tmp_path / "student", git=False, github="cs-course/lab03-starter")
    for page in release.LINKED:
        text = (tree / page).read_text()
        assert "colab.research.google.com/github/cs-course/lab03-starter/blob/main/assignment/playground.ipynb" in text
        assert release.GITHUB_PLACEHOLDER not in text
