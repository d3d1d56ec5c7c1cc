"""The GitHub Classroom workflow: it parses, runs commands that exist, and its result decodes to what
the reporter reads, even when the student's code crashes."""

import base64
import json
import os
import re
import subprocess

import pytest
import yaml

from grader.paths import REPO

WORKFLOW = REPO / "instructor/platform/classroom.yml"


@pytest.fixture(scope="module")
def workflow():
    return yaml.safe_load(WORKFLOW.read_text())


def steps(workflow):
    return workflow["jobs"]["run-autograding-tests"]["steps"]


def test_workflow_runs_on_push_with_read_only_permissions(workflow):
    assert "push" in workflow[True] and workflow["permissions"] == {"actions": "read", "contents": "read"}
    job = workflow["jobs"]["run-autograding-tests"]
    assert job["if"] == "github.actor != 'github-classroom[bot]'"


def test_install_step_uses_the_makefile_cpu_install_with_pip_cache(workflow):
    setup = next(step for step in steps(workflow) if step.get("uses", "").startswith("actions/setup-python"))
    assert setup["with"]["cache"] == "pip"
    install = next(step for step in steps(workflow) if step.get("name", "").startswith("Install"))
    assert install["run"].split("#")[0].split() == ["make", "install", "REQUIREMENTS=requirements.txt"]
    assert "download.pytorch.org/whl/cpu" in (REPO / "Makefile").read_text()


def test_reporter_reads_the_grade_step_output(workflow):
    grade = next(step for step in steps(workflow) if step.get("id") == "grade")
    reporter = next(step for step in steps(workflow) if "autograding-grading-reporter" in step.get("uses", ""))
    assert reporter["uses"] == "classroom-resources/autograding-grading-reporter@v1"
    assert re.fullmatch(r"[a-z0-9]+", grade["id"])
    assert reporter["with"]["runners"] == grade["id"]
    assert reporter["env"][f"{grade['id'].upper()}_RESULTS"] == "${{ steps.grade.outputs.result }}"


@pytest.mark.parametrize("source", ["stubs", "crash"])
def test_grade_step_always_writes_a_valid_result(workflow, tmp_path, source):
    grade = next(step for step in steps(workflow) if step.get("id") == "grade")
    impl = tmp_path / "impl"
    impl.mkdir()
    text = (REPO / "assignment/attention.py").read_text() if source == "stubs" else "import os\nos._exit(1)\n"
    (impl / "attention.py").write_text(text)
    script = (grade["run"].replace("--suite public", f"--suite public --impl {impl}")
              .replace("result.json", str(tmp_path / "result.json")))
    output = tmp_path / "github_output"
    step_summary = tmp_path / "step_summary.md"
    result = subprocess.run(["bash", "-e", "-c", script], cwd=REPO, capture_output=True, text=True,
                            env=dict(os.environ, GITHUB_OUTPUT=str(output), GITHUB_STEP_SUMMARY=str(step_summary),
                                     RUNNER_TEMP=str(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert "total" in result.stdout, "the step log shows the summary table"
    assert "| **total** |" in step_summary.read_text(), "the run's page shows the table too"
    key, _, value = output.read_text().strip().partition("=")
    document = json.loads(base64.b64decode(value))
    assert key == "result" and document["version"] == 1 and document["max_score"] > 0
    assert document["tests"] and all(isinstance(t["score"], (int, float)) for t in document["tests"])
    assert {"name", "status", "score", "message", "test_code", "filename", "line_no", "execution_time"} <= set(document["tests"][0])
    if source == "crash":
        assert {t["status"] for t in document["tests"]} == {"error"} and "import" in document["tests"][0]["message"]


def test_the_workflows_own_fallback_is_out_of_the_public_core_points_as_a_normal_run(workflow):
    """Where even Python cannot start, the workflow writes its own result: out of what a normal run records
    (the public suite's core points), so Classroom's maximum does not jump between runs."""
    from grader.run import collect_manifest, suite_paths
    from grader.tasks import BY_ID

    names, tests_dir = suite_paths("public")
    manifest = collect_manifest(tests_dir, names, REPO / "assignment")
    core = sum(meta.points for meta in manifest if not BY_ID[meta.task].bonus)
    grade = next(step for step in steps(workflow) if step.get("id") == "grade")
    fallback = json.loads(re.search(r"echo '(\{.*\})' > result.json", grade["run"]).group(1))
    assert fallback["max_score"] == core
