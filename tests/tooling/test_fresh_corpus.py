"""Submissions no one here wrote against: a helper who read only the handout and the stubs wrote correct code in
other styles and fresh mistakes (tests/corpus/fresh/, each appended to the reference: its functions replace the
reference's). Every correct one keeps full marks; every mistake loses points in its own task.

The correct ones are graded as a class, through batch, on every suite. A mistake needs only its own task's public
test file to show that it loses points there (the task's points come from that file alone): each is graded on
it, from one set of warm servers, at a small part of a public grade's cost. Only the mistakes that file misses
are graded again, with the correct ones, on every suite."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader.grade import grade
from grader.report import FlagKind
from grader.sandbox import isolation as sandbox
from grader.tasks import BY_ID
from instructor.batch import run_batch
from instructor.warm import warm_launcher
from tests.tooling.misbehaving import REFERENCE, at_import
from tests.tooling.small_checkout import small_tests, task_files

CORPUS = Path(__file__).parent.parent / "corpus" / "fresh"
ENTRIES = sorted(CORPUS.glob("*.py"))
CORRECT = [path.stem for path in ENTRIES if path.stem.startswith("correct_")]
MISTAKES = [path.stem for path in ENTRIES if path.stem.startswith("mistake_")]

pytestmark = pytest.mark.skipif(sandbox.level() != "namespaces", reason="batch grades at the namespaces level")


def task_of(name: str) -> str:
    """The task a mistake belongs to, from its docstring's first words ("Fresh mistake in TASK, ...")."""
    first = (CORPUS / f"{name}.py").read_text().splitlines()[0]
    return first.split(" in ", 1)[1].split(",", 1)[0]


def write_class(root: Path, names: list[str]) -> None:
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / "attention.py").write_text(at_import(REFERENCE, (CORPUS / f"{name}.py").read_text()))


def graded_class(root: Path, names: list[str], suite: str) -> dict:
    write_class(root, names)
    return run_batch(root, suite=suite, jobs=2, output=root.parent / "grades.csv", progress=False)


def graded_on_own_task(root: Path, names: list[str]) -> dict:
    """{name: report} of each mistake graded on its task's public test file alone."""
    write_class(root / "class", names)
    tasks = {task_of(name) for name in names}
    suites = {task: small_tests(root / "tests" / task, task_files((task,))) for task in tasks}
    with warm_launcher((str(root),)) as launcher, ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(grade, root / "class" / name, "public", tests_dir=suites[task_of(name)],
                                     launcher=launcher) for name in names}
        return {name: future.result() for name, future in futures.items()}


# a report with one of these ran none of the file's code: its zeros say nothing of the suites
NOT_RUN = (FlagKind.MISSING, FlagKind.REFUSED, FlagKind.GRADER_ERROR, FlagKind.OUT_OF_TIME)


def caught(report, name: str) -> bool:
    """Whether the mistake's own task lost points in a grade that ran the file."""
    task = report.tasks[task_of(name)]
    return task.score < task.max_score and not any(flag.kind in NOT_RUN for flag in report.flags)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    public = graded_on_own_task(tmp_path_factory.mktemp("mistakes"), MISTAKES)
    missed = [name for name in MISTAKES if not caught(public[name], name)]
    return {**graded_class(tmp_path_factory.mktemp("correct") / "class", CORRECT + missed, "all"),
            **{name: public[name] for name in MISTAKES if name not in missed}}


def test_every_mistake_names_a_task_of_the_lab():
    assert MISTAKES and all(task_of(name) in BY_ID for name in MISTAKES)


@pytest.mark.parametrize("name", CORRECT)
def test_correct_code_in_another_style_keeps_full_marks(graded, name):
    report = graded[name]
    failing = [(test.id, test.message[:300]) for test in report.tests if not test.passed]
    assert report.score == 100 and report.bonus_score == 20 and not failing, failing


@pytest.mark.parametrize("name", MISTAKES)
def test_a_fresh_mistake_loses_points_in_its_own_task(graded, name):
    assert caught(graded[name], name), f"{name} keeps every point of {task_of(name)}, or was not run: " \
                                       f"{graded[name].flags}"
