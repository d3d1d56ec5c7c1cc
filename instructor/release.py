"""Build the student template: the tree an instructor pushes as the GitHub Classroom template
repository, public (Colab opens the notebook from it). SHIPPED lists what ships (the grader/ runtime as a
whole folder); a scan proves no solution line is in it, and no branch or commit of it holds the reference.

The reference goes elsewhere: `solutions_out` is a separate copy of the template with the reference as
assignment/attention.py, for a private repository of the instructors' where the Classroom workflow shows
full marks on GitHub itself (docs/instructors.md, section 2)."""

import re
import shutil
import subprocess
from pathlib import Path

from grader.paths import INSTRUCTOR, REPO
from instructor.stubs import SOLUTION_FILE, leaked_lines

MAKEFILE_CUT = "# --- instructors and CI"
# The "Open in Colab" links name the template repository: `release --github OWNER/NAME` fills it in, and
# release refuses to build without it (the links would open a repository that does not exist).
GITHUB_PLACEHOLDER = "COURSE/lab03-template"
GITHUB_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}")
LINKED = ("README.md", "docs/lab.md")
# The notebook's self-check cell clones the template on Colab (the public tests and the grader): its
# address is filled in the same way.
CLONED_BY = ("assignment/playground.ipynb",)
SHIPPED = (
    "assignment/attention.py",
    "assignment/playground.ipynb",
    "grader",
    "lab",
    "tests/__init__.py",
    "tests/conftest.py",
    "tests/support",
    "tests/public",
    "docs/lab.md",
    "docs/grading.md",
    "docs/benchmarks.md",
    "docs/figures",
    "requirements.txt",
    "requirements-notebook.txt",
    ".gitignore",
)
PLATFORM = INSTRUCTOR / "platform"
GENERATED = {
    "README.md": PLATFORM / "README.student.md",
    ".github/workflows/classroom.yml": PLATFORM / "classroom.yml",
}


class LeakError(RuntimeError):
    """Solution code was found in the produced tree."""


def check_github(github: str | None) -> str:
    """github, if it names a real OWNER/NAME; else ValueError with one line saying what to pass."""
    if not github or github == GITHUB_PLACEHOLDER:
        raise ValueError(f"--github OWNER/NAME is required (make student GITHUB_REPO=OWNER/NAME): the template's "
                         f"public GitHub repository, which its Open in Colab links open; {GITHUB_PLACEHOLDER} is "
                         "only a placeholder")
    if not GITHUB_NAME.fullmatch(github):
        raise ValueError(f"--github {github!r} is not a GitHub OWNER/NAME such as cs101/lab03-template")
    return github


def check_solutions_out(dest: Path, solutions_out: Path) -> None:
    """Refuse a solutions folder inside the template (or around it), or one that holds anything already."""
    inside = solutions_out.resolve().is_relative_to(dest.resolve()) or dest.resolve().is_relative_to(
        solutions_out.resolve())
    if inside:
        raise ValueError(f"--solutions-out {solutions_out} must be outside the template {dest}")
    if solutions_out.exists() and any(solutions_out.iterdir()):
        raise ValueError(f"--solutions-out {solutions_out} is not empty: remove it or name a new folder")


def _copy(source, target):
    if source.is_dir():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints"))
    elif source.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def student_makefile() -> str:
    """The Makefile without its instructors' and CI's targets."""
    text = (REPO / "Makefile").read_text()
    return text[: text.index(MAKEFILE_CUT)].rstrip() + "\n"


def scan(tree: str | Path) -> list[tuple[str, str]]:
    """Every solution-only line of the reference found in a text file of tree: [(path, line)]."""
    source = SOLUTION_FILE.read_text()
    found = []
    for path in sorted(Path(tree).rglob("*")):
        if not path.is_file() or ".git" in path.parts:
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        found += [(str(path.relative_to(tree)), line) for line in leaked_lines(text, source)]
    return found


def point_links_at(tree: str | Path, github: str) -> None:
    """Make the Colab links of the shipped pages open OWNER/NAME's notebook, and the notebook's self-check
    clone OWNER/NAME."""
    for relative in (*LINKED, *CLONED_BY):
        page = Path(tree) / relative
        page.write_text(page.read_text().replace(GITHUB_PLACEHOLDER, github))


def release(dest: str | Path, git: bool = True, github: str | None = None,
            solutions_out: str | Path | None = None) -> Path:
    """Write the student template into dest (replacing it), refuse it if solution code leaked in.
    solutions_out: also write the instructors' private copy with the reference there (see the docstring)."""
    github = check_github(github)
    dest = Path(dest)
    if solutions_out is not None:
        check_solutions_out(dest, Path(solutions_out))
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for relative in SHIPPED:
        _copy(REPO / relative, dest / relative)
    for relative, source in GENERATED.items():
        _copy(source, dest / relative)
    (dest / "Makefile").write_text(student_makefile())
    point_links_at(dest, github)
    leaks = scan(dest)
    if leaks:
        shutil.rmtree(dest)
        shown = "; ".join(f"{path}: {line}" for path, line in leaks[:5])
        raise LeakError(f"solution code in the student template: {shown}")
    if git:
        _git(dest, "init", "-q", "-b", "main")
        _commit(dest, "Lab 03: Attention from Scratch (starter)")
    if solutions_out is not None:
        write_solutions_copy(dest, Path(solutions_out), git)
    return dest


def _git(tree, *args):
    subprocess.run(["git", *args], cwd=tree, check=True)


def _commit(tree, message):
    _git(tree, "add", "-A")
    _git(tree, "-c", "user.name=Course staff", "-c", "user.email=staff@example.invalid", "commit", "-q", "-m", message)


def write_solutions_copy(template: Path, out: Path, git: bool = True) -> Path:
    """The template with the reference as assignment/attention.py, in out (never in the template's history):
    pushed to a private repository, the Classroom workflow there must give full marks."""
    shutil.copytree(template, out, ignore=shutil.ignore_patterns(".git"), dirs_exist_ok=True)
    shutil.copy2(SOLUTION_FILE, out / "assignment" / "attention.py")
    if git:
        _git(out, "init", "-q", "-b", "main")
        _commit(out, "Lab 03 with the reference solution (instructors only: keep this repository private)")
    return out
