"""Build autograder.zip for Gradescope: its two platform scripts, the whole grader/ runtime and the suites."""

import zipfile
from pathlib import Path

from grader.paths import REPO
from instructor.release import PLATFORM, SHIPPED

SOURCES = (*(path for path in SHIPPED if not path.startswith(("assignment/", "docs/", ".gitignore"))), "tests/hidden")
EXECUTABLE = 0o100755 << 16


def _files(relative):
    path = REPO / relative
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return [path] if path.exists() else []


def build(dest: str | Path) -> Path:
    """Write dest/autograder.zip: setup.sh and run_autograder at its root, beside the grader and suites."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / "autograder.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for script in ("setup.sh", "run_autograder"):
            info = zipfile.ZipInfo(script)
            info.external_attr = EXECUTABLE
            bundle.writestr(info, (PLATFORM / script).read_text())
        for relative in SOURCES:
            for path in _files(relative):
                bundle.write(path, path.relative_to(REPO).as_posix())
    return archive
