"""Build the student template: the tree an instructor pushes as the GitHub Classroom template
repository. SHIPPED lists what ships (the grader/ runtime as a whole folder); a scan proves no
solution line is in it."""

import shutil
import subprocess
from pathlib import Path

from grader.paths import INSTRUCTOR, REPO
from instructor.stubs import SOLUTION_FILE, leaked_lines

MAKEFILE_CUT = "# --- instructors and CI"
SOLUTIONS_BRANCH = "solutions"
# The "Open in Colab" links name the template repository: `release --github OWNER/NAME` fills it in.
GITHUB_PLACEHOLDER = "COURSE/lab03-template"
LINKED = ("README.md", "docs/lab.md")
SHIPPED = (
    "assignment/attention.py",
    "assignment/playground.ipynb",
    "grader",
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
    """Make the Colab links of the shipped pages open OWNER/NAME's notebook."""
    for relative in LINKED:
        page = Path(tree) / relative
        page.write_text(page.read_text().replace(GITHUB_PLACEHOLDER, github))


def release(dest: str | Path, git: bool = True, github: str = GITHUB_PLACEHOLDER) -> Path:
    """Write the student template into dest (replacing it), refuse it if solution code leaked in."""
    dest = Path(dest)
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
        add_solutions_branch(dest)
    return dest


def _git(tree, *args):
    subprocess.run(["git", *args], cwd=tree, check=True)


def _commit(tree, message):
    _git(tree, "add", "-A")
    _git(tree, "-c", "user.name=Course staff", "-c", "user.email=staff@example.invalid", "commit", "-q", "-m", message)


def add_solutions_branch(tree: str | Path) -> None:
    """A `solutions` branch on top of main with the reference as assignment/attention.py: pushed to the
    private template, it shows on GitHub itself that the Classroom workflow gives full marks."""
    _git(tree, "checkout", "-q", "-b", SOLUTIONS_BRANCH)
    shutil.copy2(SOLUTION_FILE, Path(tree) / "assignment" / "attention.py")
    _commit(tree, "Reference solution (instructors only: never make this branch public)")
    _git(tree, "checkout", "-q", "main")
