"""batch on Dask: a 2-worker LocalCluster writes the same gradebook as local processes, a dead worker's
student is graded once more elsewhere, and a second death is that student's grader error."""

import os
import shutil

import pytest

from grader.paths import REPO
from grader.report import FlagKind, make_report
from instructor.batch import run_batch
from instructor.cluster import DASK_SETTINGS, Job, connect, environment, grade_on_cluster, local_workers

CLASS = {
    "ada": REPO / "solutions" / "attention.py",
    "bob": REPO / "assignment" / "attention.py",
}


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    for student, source in CLASS.items():
        (root / student).mkdir()
        shutil.copy(source, root / student / "attention.py")
    (root / "cy").mkdir()  # submitted nothing
    (root / "dee").mkdir()
    (root / "dee" / "attention.py").write_text("import os\nos._exit(3)\n")
    return root


def test_a_local_cluster_writes_the_local_batchs_gradebook_byte_for_byte(klass, tmp_path):
    local = tmp_path / "local.csv"
    on_dask = tmp_path / "dask.csv"
    run_batch(klass, "public", jobs=2, output=local, progress=False)
    run_batch(klass, "public", output=on_dask, cluster="local:2", progress=False)
    assert on_dask.read_bytes() == local.read_bytes()
    assert sorted(p.name for p in (tmp_path / "dask-reports").iterdir()) == ["ada.json", "bob.json", "cy.json",
                                                                            "dee.json"]


def test_a_student_whose_worker_dies_once_is_graded_once_more_and_twice_is_a_grader_error(tmp_path):
    def dies(job, suite, timeout, no_sandbox):
        marker = tmp_path / job.student
        if job.student == "always" or not marker.exists():
            marker.touch()
            os._exit(1)
        return job.student, make_report([], [], suite, job.student), False

    results = {}
    with connect(None, "local:2") as client:
        for student in ("once", "always"):  # one at a time: a death counts against every task on that worker
            grade_on_cluster([Job(student, b"")], "public", 10.0, client,
                             lambda name, report: results.setdefault(name, []).append(report), task=dies)
    assert results["once"] == [make_report([], [], "public", "once")]
    [flag] = [flag for report in results["always"] for flag in report.flags]
    assert flag.kind is FlagKind.GRADER_ERROR and "died twice" in flag.text


def test_a_task_that_saw_the_grading_files_change_stops_the_batch(tmp_path):
    from instructor.cluster import GradingFilesChanged

    def tampered(job, suite, timeout, no_sandbox):
        return job.student, make_report([], [], suite, job.student), True

    with connect(None, "local:1") as client, pytest.raises(GradingFilesChanged, match="rerun"):
        grade_on_cluster([Job("mallory", b"")], "public", 10.0, client, lambda *_: None, task=tampered)


def test_cluster_takes_local_and_a_worker_count():
    assert local_workers("local:3") == 3
    for wrong in ("local", "local:0", "slurm:2", "local:x"):
        with pytest.raises(ValueError, match="local:N"):
            local_workers(wrong)


def test_the_instructors_guide_gives_hand_started_clusters_the_grading_settings():
    guide = (REPO / "docs" / "instructors.md").read_text()
    missing = [f"export {name}={value}" for name, value in environment().items()
               if f"export {name}={value}" not in guide]
    assert not missing, f"docs/instructors.md lacks {missing}"


def test_the_settings_read_back_from_their_environment_variables(monkeypatch):
    import dask

    for name, value in environment().items():
        monkeypatch.setenv(name, value)
    config = dask.config.collect_env()
    for key, value in DASK_SETTINGS.items():
        assert dask.config.get(key, config=config) == value


def test_a_local_cluster_that_fails_to_close_after_the_grades_costs_one_line_not_the_batch(capsys):
    """Closing while a nanny restarts a worker a student's grading killed raised inside Dask: the batch, whose
    grades were all recorded, ended in a traceback."""
    from instructor.cluster import close_local_cluster

    class Racing:
        def close(self):
            raise AssertionError("can only join a started process")

    close_local_cluster(Racing())
    assert "did not close cleanly (AssertionError: can only join a started process)" in capsys.readouterr().err
