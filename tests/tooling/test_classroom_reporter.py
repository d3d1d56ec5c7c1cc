"""The Classroom result, read by the real autograding-grading-reporter (dist/main.js, node), fed the
way the workflow feeds it: what Classroom records, whether the run is green, and that the console
table agrees with the recorded points.

The reporter comes from CLASSROOM_REPORTER_DIR, or ../shared/vendor/autograding-grading-reporter-v1
beside the repository. Without it (or without node) these tests fail: they never skip.
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from grader.formats import RENDERERS
from grader.grade import grade
from grader.paths import REPO
from instructor.mutants import apply, catalogue
from instructor.warm import warm_launcher
from tests.tooling.misbehaving import REFERENCE, STUBS, at_import

REPORTER_DIR = Path(os.environ.get("CLASSROOM_REPORTER_DIR",
                                   REPO.parent / "shared/vendor/autograding-grading-reporter-v1"))
RUNNER = "grade"
WITHOUT_BONUS = """
def tiled_attention(*args, **kwargs):
    raise NotImplementedError("tiled_attention is not implemented yet")


class KVCache:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("KVCache is not implemented yet")


def decode_step(*args, **kwargs):
    raise NotImplementedError("decode_step is not implemented yet")
"""


def buggy_source():
    public = next(mutant for mutant in catalogue() if mutant.public and mutant.task == "scores")
    return apply(public, REFERENCE)


CASES = {
    "reference": lambda: REFERENCE,
    "core_without_bonus": lambda: at_import(REFERENCE, WITHOUT_BONUS),
    "buggy": buggy_source,
    # os._exit is refused before it runs now; sys.exit is the crash at import the lab's language still allows
    "crash_at_import": lambda: at_import(REFERENCE, "import sys\nsys.exit(1)"),
    "zeros": lambda: STUBS,
}


@pytest.fixture(scope="module")
def reporter():
    main = REPORTER_DIR / "dist/main.js"
    if not main.is_file() or shutil.which("node") is None:
        pytest.fail(f"the Classroom reporter is needed at {main} with node on PATH "
                    "(set CLASSROOM_REPORTER_DIR to a checkout of autograding-grading-reporter v1)")
    return REPORTER_DIR


@pytest.fixture(scope="module")
def runs(reporter, tmp_path_factory, reference_public, stubs_public):
    """Per case: (report, what the reporter did with the classroom JSON of the public suite). The reference's
    and the stubs' reports are the session's (tests/tooling/conftest.py); the other cases are graded through
    batch's warm servers: the subject here is the reporter, not how a grade starts."""
    graded = {"reference": reference_public, "zeros": stubs_public}
    root = tmp_path_factory.mktemp("cases")
    with warm_launcher((str(root),)) as launcher:
        return {case: grade_and_report(case, reporter, root / case, graded.get(case), launcher) for case in CASES}


def grade_and_report(case, reporter, folder, report=None, launcher=None):
    folder.mkdir()
    if report is None:
        (folder / "attention.py").write_text(CASES[case]())
        report = grade(folder, "public", launcher=launcher)
    result = folder / "result.json"
    result.write_text(RENDERERS["classroom"](report))
    run = subprocess.run(["bash", str(reporter / "run_reporter.sh"), str(reporter), str(result), RUNNER],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ, FAIL_ON_TESTS="1"))
    return report, run


def recorded(run):
    """The points Classroom records: the reporter's `Autograding report` annotation."""
    line = re.search(r"^::notice title=Autograding report::(.*)$", run.stdout, re.MULTILINE)
    assert line, run.stdout + run.stderr
    return json.loads(line.group(1))


def console_total(run):
    line = re.search(r"^│ Total: +│ ([^ ]+) +│ ([^ ]+) +│$", run.stdout, re.MULTILINE)
    assert line, run.stdout
    return float(line.group(1)), float(line.group(2))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_reporter_accepts_the_result(runs, case):
    _, run = runs[case]
    assert run.returncode in (0, 3), run.stdout + run.stderr
    assert "REJECTED" not in run.stderr


@pytest.mark.parametrize("case", sorted(CASES))
def test_recorded_points_are_the_core_score_out_of_the_core_maximum(runs, case):
    report, run = runs[case]
    points = recorded(run)
    assert points == {"totalPoints": report.score, "maxPoints": report.max_score}
    assert 0 <= points["totalPoints"] <= points["maxPoints"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_console_table_agrees_with_the_recorded_points(runs, case):
    _, run = runs[case]
    score, maximum = console_total(run)
    points = recorded(run)
    assert abs(score - points["totalPoints"]) < 1e-6 and maximum == points["maxPoints"]
    assert "console table total" not in run.stderr


@pytest.mark.parametrize("case", ["reference", "core_without_bonus"])
def test_full_core_marks_record_full_points_and_a_green_run(runs, case):
    report, run = runs[case]
    assert report.score == report.max_score > 0, report.tasks
    assert recorded(run)["totalPoints"] == report.max_score
    assert run.returncode == 0, run.stdout


def test_the_bonus_neither_adds_nor_is_needed_for_classroom_points(runs):
    with_bonus, run = runs["reference"]
    assert with_bonus.bonus_score == with_bonus.bonus_max_score > 0
    assert recorded(run)["totalPoints"] == with_bonus.max_score
    without_bonus, run = runs["core_without_bonus"]
    assert without_bonus.bonus_score == 0 < without_bonus.bonus_max_score
    assert recorded(run)["totalPoints"] == without_bonus.max_score


@pytest.mark.parametrize("case", ["buggy", "crash_at_import", "zeros"])
def test_lost_points_are_recorded_as_lost_and_the_run_is_red(runs, case):
    report, run = runs[case]
    assert recorded(run)["totalPoints"] == report.score < report.max_score
    assert run.returncode == 3, run.stdout


@pytest.mark.parametrize("case", ["crash_at_import", "zeros"])
def test_nothing_that_works_records_nothing(runs, case):
    assert recorded(runs[case][1])["totalPoints"] == 0


def test_an_import_crash_is_printed_by_the_reporter(runs):
    _, run = runs["crash_at_import"]
    assert "called sys.exit(1) while being imported" in run.stdout
