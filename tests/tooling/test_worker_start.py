"""A worker that cannot start is the grader's failure, whatever its start raised: the proxy tries again, then
raises SandboxFailed (a grader error, exit 2), never an error of the student's code."""

import pytest

from grader.sandbox import proxy
from grader.sandbox.errors import SandboxFailed
from grader.sandbox.isolation import SandboxUnavailable
from grader.sandbox.proxy import Submission


def test_a_start_that_finds_no_unshare_program_is_tried_again_then_is_the_graders_failure(monkeypatch, tmp_path):
    """A pytest child starts a worker again after a crash, through the `unshare` program: where that is gone from
    its PATH, the start raises SandboxUnavailable."""
    (tmp_path / "attention.py").write_text("x = 1\n")
    submission = Submission(tmp_path / "attention.py")
    starts = []

    def no_unshare() -> None:
        starts.append(1)
        raise SandboxUnavailable("`unshare` (util-linux) is no longer on PATH")

    monkeypatch.setattr(proxy, "START_BACKOFF_S", (0.0, 0.0))
    monkeypatch.setattr(submission, "start", no_unshare)
    with pytest.raises(SandboxFailed, match="no longer on PATH"):
        submission._start_until_ready()
    assert len(starts) == proxy.START_ATTEMPTS
