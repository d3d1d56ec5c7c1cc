"""The clock timeouts run on (grader.sandbox.clock): wall time less the worker's wait for a CPU."""

import subprocess
import sys
import time

import pytest

from grader.sandbox.clock import charged, tree_waits
from grader.sandbox.errors import SubmissionTimeout
from grader.sandbox.policy import Limits

MAIN = (100, 100)


def test_time_spent_waiting_for_a_cpu_is_not_charged():
    assert charged(10.0, {MAIN: 1.0}, {MAIN: 8.0}) == pytest.approx(3.0)


def test_time_spent_sleeping_is_charged_in_full():
    assert charged(10.0, {MAIN: 1.0}, {MAIN: 1.0}) == 10.0


def test_threads_waiting_side_by_side_take_away_the_longest_wait_not_their_sum():
    assert charged(10.0, {MAIN: 0.0, (100, 101): 0.0}, {MAIN: 6.0, (100, 101): 5.0}) == pytest.approx(4.0)


def test_a_thread_that_started_meanwhile_waited_all_of_its_wait_then():
    assert charged(10.0, {MAIN: 0.0}, {MAIN: 1.0, (200, 200): 3.0}) == pytest.approx(7.0)


def test_the_charge_stays_between_zero_and_the_wall_time():
    assert charged(2.0, {MAIN: 0.0}, {MAIN: 5.0}) == 0.0  # readings taken a moment apart
    assert charged(2.0, {MAIN: 5.0}, {MAIN: 1.0}) == 2.0  # a pid reused by another thread


def test_without_readings_the_charge_is_the_wall_time():
    assert charged(3.0, None, {MAIN: 1.0}) == charged(3.0, {MAIN: 1.0}, None) == 3.0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/PID/task/TID/schedstat is Linux's")
def test_every_thread_of_the_process_tree_is_read():
    child = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    try:
        time.sleep(0.5)
        waits = tree_waits(child)
        assert waits is not None and (child.pid, child.pid) in waits
        assert len({pid for pid, _ in waits}) == 2  # sh and its sleep
        assert all(wait >= 0 for wait in waits.values())
    finally:
        child.kill()
        child.wait()


SLEEPS_AT_IMPORT = "import time\nwhile True:\n    time.sleep(1)\n"


def test_an_import_that_sleeps_is_stopped_within_the_import_timeout_and_ten_seconds(tmp_path):
    from grader.sandbox.proxy import Submission

    (tmp_path / "attention.py").write_text(SLEEPS_AT_IMPORT)
    submission = Submission(tmp_path / "attention.py", limits=Limits(import_seconds=3.0))
    try:
        submission._start_until_ready()  # the sandbox and torch: the grader's time, not the import's
        started = time.monotonic()
        with pytest.raises(SubmissionTimeout, match="importing attention.py did not finish within 3 s"):
            submission._ensure()  # the first request: the import
        assert time.monotonic() - started < 3.0 + 10.0
    finally:
        submission.stop()
