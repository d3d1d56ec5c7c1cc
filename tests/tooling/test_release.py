"""The student template: what ships, what never ships, and that it works as a student starts it."""

import os
import subprocess
import sys

import pytest

from grader.paths import REPO
from instructor import release
from instructor.stubs import SOLUTION_FILE, solution_snippets

GITHUB = "cs-course/lab03-starter"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("template")
    return release.release(root / "student", github=GITHUB, solutions_out=root / "solutions"), root / "solutions"


@pytest.fixture(scope="module")
def template(built):
    return built[0]


def files(tree):
    return {str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() and ".git" not in p.relative_to(tree).parts}


def test_template_has_what_a_student_needs(template):
    assert {"assignment/attention.py", "assignment/playground.ipynb", "Makefile", "README.md", "requirements.txt",
            "requirements-notebook.txt",
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


def git(tree, *args):
    return subprocess.run(["git", *args], cwd=tree, capture_output=True, text=True, check=True).stdout.split()


def test_the_template_has_one_branch_and_no_commit_holds_the_reference(template):
    assert git(template, "branch", "--all", "--format=%(refname:short)") == ["main"]
    assert len(git(template, "rev-list", "--all")) == 1


def test_the_solutions_copy_is_elsewhere_changes_only_attention_py_and_scores_full_marks(built, tmp_path):
    template, solutions = built
    assert not solutions.resolve().is_relative_to(template.resolve())
    assert files(solutions) == files(template)
    changed = [name for name in files(template) if (template / name).read_bytes() != (solutions / name).read_bytes()]
    assert changed == ["assignment/attention.py"]
    assert (solutions / "assignment/attention.py").read_text() == SOLUTION_FILE.read_text()
    checkout = tmp_path / "solutions"
    subprocess.run(["git", "clone", "-q", str(solutions), str(checkout)], check=True)
    os.symlink(REPO / ".venv", checkout / ".venv")
    result = subprocess.run(["make", "test"], cwd=checkout, capture_output=True, text=True)
    assert result.returncode == 0 and "public tests passed" in result.stdout, result.stdout[-3000:]


@pytest.mark.parametrize("github", [None, release.GITHUB_PLACEHOLDER])
def test_release_refuses_to_build_with_the_placeholder_repository_in_the_colab_links(tmp_path, github):
    with pytest.raises(ValueError, match="^--github OWNER/NAME is required .*GITHUB_REPO"):
        release.release(tmp_path / "student", github=github)
    assert not (tmp_path / "student").exists()


def test_release_without_github_says_so_in_one_line_and_exits_2(tmp_path):
    result = subprocess.run([sys.executable, "-m", "instructor", "release", str(tmp_path / "student")], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "--github" in result.stderr and "Traceback" not in result.stderr


def test_release_refuses_a_malformed_repository_name(tmp_path):
    with pytest.raises(ValueError, match="not a GitHub OWNER/NAME"):
        release.release(tmp_path / "student", github="https://github.com/x/y")


def test_release_refuses_a_solutions_folder_inside_the_template(tmp_path):
    with pytest.raises(ValueError, match="--solutions-out .* must be outside the template"):
        release.release(tmp_path / "student", github=GITHUB, solutions_out=tmp_path / "student" / "solutions")


def test_template_makefile_has_no_instructor_targets(template):
    makefile = (template / "Makefile").read_text()
    assert "solutions" not in makefile and "mutants" not in makefile
    assert "\ntest:" in makefile and "\ninstall:" in makefile


def test_make_test_in_the_template_scores_zero_with_not_implemented_yet(template):
    os.symlink(REPO / ".venv", template / ".venv")
    install = subprocess.run(["make", "install"], cwd=template, capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-2000:]
    result = subprocess.run(["make", "test"], cwd=template, capture_output=True, text=True)
    assert result.returncode == 0, "points lost are the table's to show, not a make error"
    assert "Error 1" not in result.stderr
    assert "total" in result.stdout and " 0 / " in result.stdout
    rows = [line for line in result.stdout.splitlines() if " / " in line and line.strip().split(" ")[0] in
            ("scores", "causal_mask", "softmax_weights", "sdpa", "heads", "divisibility", "mha", "efficiency")]
    assert len(rows) == 8 and all("not implemented yet" in row for row in rows), result.stdout


def test_the_notebooks_self_check_clones_the_named_repository(tmp_path):
    tree = release.release(tmp_path / "student", git=False, github=GITHUB)
    text = (tree / "assignment" / "playground.ipynb").read_text()
    assert f'LAB_TEMPLATE = \\"https://github.com/{GITHUB}.git\\"' in text
    assert release.GITHUB_PLACEHOLDER not in text


def test_the_colab_links_open_the_named_repository(tmp_path):
    tree = release.release(tmp_path / "student", git=False, github=GITHUB)
    for page in release.LINKED:
        text = (tree / page).read_text()
        assert "colab.research.google.com/github/cs-course/lab03-starter/blob/main/assignment/playground.ipynb" in text
        assert release.GITHUB_PLACEHOLDER not in text
