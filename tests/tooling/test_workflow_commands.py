"""No student text becomes a GitHub workflow command: what the Classroom workflow's grade step and the real
reporter print, read as GitHub's runner reads a log, obeys only the commands the grader and the reporter meant."""

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from grader.formats.workflow import inert
from grader.paths import REPO
from tests.tooling.test_classroom_reporter import REPORTER_DIR, RUNNER

FORGED = ("boom\n::error file=x::forged\n   ::add-mask::word\r\t::notice title=Autograding report::"
          '{"totalPoints":99,"maxPoints":99}\nsee ##[warning]legacy')
STUDENT_WORDS = ("forged", "add-mask", "word", "\"totalPoints\":99", "legacy")
STUDENT = f"raise RuntimeError({FORGED!r})\n"


def live_commands(log: str) -> list[str]:
    """The workflow commands a runner obeys in log: a line ends at \\r\\n, \\r or \\n; `::name ...` at its start
    after leading whitespace is trimmed, `##[name` anywhere; nothing between ::stop-commands::TOKEN and ::TOKEN::."""
    commands, stopped = [], None
    for line in re.split(r"\r\n|\r|\n", log):
        trimmed = line.lstrip()  # Python's whitespace: a superset of what .NET's TrimStart removes
        if stopped is not None:
            if trimmed == f"::{stopped}::":
                stopped = None
            continue
        if trimmed.startswith("::stop-commands::"):
            stopped = trimmed.removeprefix("::stop-commands::")
        elif trimmed.startswith("::") or "##[" in line:
            commands.append(line)
    return commands


def test_an_indented_command_in_a_message_is_not_live():
    assert live_commands(inert("boom\n    ::error file=x::forged")) == []


def test_a_command_after_a_carriage_return_is_not_live():
    assert live_commands(inert("boom\r::add-mask::word")) == []


def test_a_legacy_command_anywhere_in_a_line_is_not_live():
    assert live_commands(inert("see ##[error]forged")) == []


def test_a_message_without_commands_is_left_as_it_is():
    text = "q[2, 3] differs: 0.125 expected, got 0.5 :: see the handout\n  indented line"
    assert inert(text) == text


@pytest.fixture(scope="module")
def grade_step(tmp_path_factory):
    """The workflow's grade step, run on a submission whose exception message forges commands: (its log,
    result.json)."""
    folder = tmp_path_factory.mktemp("forger")
    (folder / "impl").mkdir()
    (folder / "impl" / "attention.py").write_text(STUDENT)
    workflow = yaml.safe_load((REPO / "instructor/platform/classroom.yml").read_text())
    step = next(step for step in workflow["jobs"]["run-autograding-tests"]["steps"] if step.get("id") == "grade")
    script = (step["run"].replace("--suite public", f"--suite public --impl {folder / 'impl'}")
              .replace("result.json", str(folder / "result.json")))
    done = subprocess.run(["bash", "-e", "-c", script], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, GITHUB_OUTPUT=str(folder / "output"),
                                   GITHUB_STEP_SUMMARY=str(folder / "summary.md"), RUNNER_TEMP=str(folder)))
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout + done.stderr, folder / "result.json"


def test_the_student_text_reaches_the_grade_step_log(grade_step):
    assert "forged" in grade_step[0]


def test_the_grade_step_obeys_no_command_of_the_students(grade_step):
    commands = live_commands(grade_step[0])
    assert not [command for command in commands if any(word in command for word in STUDENT_WORDS)], commands


def test_the_grade_step_log_holds_no_command_of_the_students_even_where_stop_commands_were_ignored(grade_step):
    log = re.sub(r"^::stop-commands::.*$", "", grade_step[0], flags=re.MULTILINE)
    commands = live_commands(log)
    assert not [command for command in commands if any(word in command for word in STUDENT_WORDS)], commands


def test_the_reporter_obeys_no_command_of_the_students(grade_step):
    if not (REPORTER_DIR / "dist/main.js").is_file() or shutil.which("node") is None:
        pytest.fail(f"the Classroom reporter is needed at {REPORTER_DIR} with node on PATH")
    result = grade_step[1]
    assert any("forged" in test["message"] for test in json.loads(result.read_text())["tests"])
    done = subprocess.run(["bash", str(REPORTER_DIR / "run_reporter.sh"), str(REPORTER_DIR), str(result), RUNNER],
                          capture_output=True, text=True, timeout=120)
    assert "forged" in done.stdout, "the reporter prints the message"
    commands = live_commands(done.stdout)
    assert not [command for command in commands if any(word in command for word in STUDENT_WORDS)], commands
    assert [command.split("::")[1].split(" ")[0] for command in commands] == ["notice", "notice", "error"]
