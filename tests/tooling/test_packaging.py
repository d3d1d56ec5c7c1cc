"""pyproject.toml: `pip install .` makes grader and instructor importable from any folder (a Dask host
runs `dask worker` from wherever it likes, not from this checkout)."""

import shutil
import subprocess
import sys

import pytest

from grader.paths import REPO

SOURCES = ("pyproject.toml", "README.md", "grader", "instructor", "lab")


def test_pip_install_makes_grader_and_instructor_importable_from_any_folder(tmp_path):
    assert (REPO / "pyproject.toml").is_file(), "no pyproject.toml: the project cannot be pip-installed"
    if subprocess.run([sys.executable, "-c", "import setuptools"], capture_output=True).returncode != 0:
        pytest.skip("the build backend (--no-build-isolation) is this Python's setuptools, which it lacks")
    source = tmp_path / "source"  # a copy: setuptools leaves build/ and *.egg-info where it builds
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, source / name)
    target, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                              "--no-index", "--target", str(target), str(source)], capture_output=True, text=True)
    assert install.returncode == 0, install.stdout[-1500:] + install.stderr[:3000]
    probe = ("import grader.cli, grader.formats, grader.sandbox.isolation, instructor.cli, instructor.cluster, "
             "instructor.bench.cli, instructor.release; import pathlib, sys; "
             "print(pathlib.Path(grader.__file__).parent.parent); "
             "print(all(f.exists() for f in instructor.release.GENERATED.values()))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=elsewhere, capture_output=True, text=True,
                            env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == [str(target), "True"]
