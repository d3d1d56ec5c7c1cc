"""Installing never brings a CUDA torch: torch comes from PyTorch's CPU index alone, in its own step, and
grader.cpu_torch stops any install whose torch is a CUDA build anyway."""

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pip
import pytest

from grader.paths import REPO

DEAD_INDEX = "http://127.0.0.1:9/"  # the discard port: nothing answers there
INSTALLS = ("Makefile", "instructor/platform/setup.sh", "instructor/platform/README.student.md")


def offline_pip_environment() -> dict[str, str]:
    """This environment without any pip configuration: pip sees only what the command line gives it."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "VIRTUAL_ENV"))}
    return {**environment, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INPUT": "1"}


def nothing_listens_on_the_dead_index() -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", 9)) != 0


def test_make_install_with_an_unreachable_cpu_index_fails_in_one_line_and_installs_no_torch(tmp_path):
    if not nothing_listens_on_the_dead_index():
        pytest.skip("something listens on 127.0.0.1:9: this test would download from it")
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("no venv module here")
    # --without-pip, then a copy of this Python's pip alone: a fresh venv in a second, not ensurepip's five
    site = next((venv / "lib").glob("python3*/site-packages"))
    shutil.copytree(Path(pip.__path__[0]), site / "pip", ignore=shutil.ignore_patterns("__pycache__"))
    result = subprocess.run(["make", "-s", "-f", str(REPO / "Makefile"), "install", f"VENV={venv}",
                             f"TORCH_INDEX={DEAD_INDEX}", "TORCH_PIP_OPTIONS=--retries 0 --timeout 5"],
                            cwd=REPO, capture_output=True, text=True, env=offline_pip_environment(), timeout=120)
    assert result.returncode != 0
    said = [line for line in result.stderr.splitlines() if line.startswith("make install:")]
    assert len(said) == 1 and f"from {DEAD_INDEX}" in said[0] and "TORCH_INDEX" in said[0], result.stderr
    assert not list(site.glob("torch*")), "no torch may be installed"
    assert not list(site.glob("numpy*")), "the requirements step must not run after torch failed"


def fake_torch(folder, cuda):
    package = folder / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"__version__ = '2.13.0'\nclass version:\n    cuda = {cuda!r}\n")
    return folder


def cpu_check(path_first=None):
    pythonpath = os.pathsep.join([str(p) for p in (path_first, REPO) if p is not None])
    return subprocess.run([sys.executable, "-m", "grader.cpu_torch"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": pythonpath})


def test_the_cpu_check_refuses_a_cuda_build_in_one_line_saying_how_to_fix_it(tmp_path):
    result = cpu_check(fake_torch(tmp_path, "12.4"))
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert "CUDA 12.4 build" in result.stderr and "--index-url https://download.pytorch.org/whl/cpu" in result.stderr


def test_the_cpu_check_accepts_the_installed_cpu_torch():
    result = cpu_check()
    assert result.returncode == 0, result.stderr
    assert "a CPU build" in result.stdout


@pytest.mark.parametrize("relative", INSTALLS)
def test_every_install_takes_torch_from_the_cpu_index_alone_then_checks_it(relative):
    text = (REPO / relative).read_text()
    commands = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in commands if "--extra-index-url" in line]
    text = text.replace('"$(TORCH_SPEC)"', "torch==$(TORCH_SPEC)")  # the Makefile names its pin once, above
    torch_lines = [line for line in text.splitlines() if re.search(r"pip install .*torch==", line)]
    assert torch_lines, f"{relative} installs no pinned torch"
    for line in torch_lines:
        assert re.search(r"--index-url (https://download\.pytorch\.org/whl/cpu|\$\(TORCH_INDEX\))", line), line
        assert "-r " not in line, f"torch is installed in a step of its own: {line}"
    after = text[text.index(torch_lines[-1]):]
    assert "grader.cpu_torch" in after, f"{relative} does not check that torch is a CPU build"


def tiny_wheel(folder: Path, version: str) -> None:
    """A valid, empty wheel of torch at version (pip reads its metadata; nothing in it is run)."""
    import zipfile

    name = f"torch-{version}.dist-info"
    files = {f"{name}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n",
             f"{name}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{name}/RECORD"] = "".join(f"{path},,\n" for path in files) + f"{name}/RECORD,,\n"
    with zipfile.ZipFile(folder / f"torch-{version}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


def torch_spec_of_make_install() -> str:
    dry = subprocess.run(["make", "-n", "-s", "-f", str(REPO / "Makefile"), "install"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return re.search(r'pip install .*?"(torch==[^"]+)"', dry).group(1)


def chosen_torch(spec: str, links: Path) -> str:
    report = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
                             "--no-deps", "--ignore-installed", "--index-url", DEAD_INDEX, "--retries", "0", "--timeout", "2",
                             "--find-links", str(links), spec], capture_output=True, text=True,
                            env=offline_pip_environment(), timeout=120)
    assert report.returncode == 0, report.stderr[-2000:]
    import json

    return json.loads(report.stdout)["install"][0]["metadata"]["version"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the +cpu pin is Linux's")
def test_make_install_takes_the_cpu_build_even_where_the_pip_configuration_offers_a_cuda_one(tmp_path):
    if not nothing_listens_on_the_dead_index():
        pytest.skip("something listens on 127.0.0.1:9")
    for version in ("2.13.0+cpu", "2.13.0+cu128"):
        tiny_wheel(tmp_path, version)
    assert chosen_torch("torch==2.13.0", tmp_path) == "2.13.0+cu128"  # why the pin names +cpu
    assert chosen_torch(torch_spec_of_make_install(), tmp_path) == "2.13.0+cpu"
