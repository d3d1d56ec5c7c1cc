"""The limits' settings (grader/sandbox/policy.py): every value the environment may give grades correct code
exactly, and any other is refused in one line that names the variable."""

import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from grader.grade import grade
from grader.paths import REPO, Env
from grader.sandbox.policy import DEFAULT, ENVIRONMENT, FLOORS, SettingError, limits_from


@pytest.mark.parametrize("variable", sorted(ENVIRONMENT.values()))
@pytest.mark.parametrize("text", ["0", "-3", "abc", "nan", "inf", "0.5"])
def test_a_setting_that_is_not_a_number_at_or_above_its_floor_is_refused_naming_it(variable, text):
    with pytest.raises(SettingError, match=f"{variable}='{text}': give a number of at least"):
        limits_from({variable: text})


def test_a_setting_at_its_floor_is_taken():
    limits = limits_from({variable: str(FLOORS[name]) for name, variable in ENVIRONMENT.items()})
    assert limits == replace(DEFAULT, **FLOORS)


def test_an_empty_setting_keeps_the_default():
    assert limits_from({Env.CALL_TIMEOUT: ""}) == DEFAULT


def test_the_reference_earns_full_marks_with_every_limit_at_its_floor():
    report = grade(REPO / "solutions", "all", limits=replace(DEFAULT, **FLOORS))
    assert (report.score, report.bonus_score) == (report.max_score, report.bonus_max_score), report.failure


@pytest.mark.parametrize("tool", [["grader", "grade"], ["instructor", "batch", "{class}"]])
def test_a_refused_setting_is_one_line_and_exit_2(tool, tmp_path):
    (tmp_path / "ada").mkdir()
    shutil.copy(REPO / "solutions" / "attention.py", tmp_path / "ada")
    argv = [str(tmp_path) if part == "{class}" else part for part in tool]
    done = subprocess.run([sys.executable, "-m", *argv], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", Env.WORKER_MEMORY_MB: "1"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].endswith(
        f"{Env.WORKER_MEMORY_MB}='1': give a number of at least 256 (the default is 3072), or unset it")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("text", ["9", "-1", "nan", "inf", "soon"])
def test_a_whole_run_limit_too_short_for_correct_code_is_refused_in_one_line(text):
    from grader.cli import build_parser

    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["grade", "--timeout", text])
    assert stopped.value.code == 2
