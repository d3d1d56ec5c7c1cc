"""The fork loop the prefork server and the zygote share (instructor.warm.forkserver): one server, several channels,
and a client that goes away costs no one else."""

import json
import os
import socket

import pytest

from grader.handover import Handover
from grader.run import child_env
from instructor.warm import forkserver, prefork

pytestmark = pytest.mark.skipif(not prefork.available(), reason="needs Linux pidfds")


@pytest.fixture(scope="module")
def server():
    with prefork.Prefork(env=child_env()) as started:
        yield started


def forked_pytest(server, tmp_path):
    with open(tmp_path / "out.log", "wb") as out:
        child = server.start(["--version"], Handover(), str(tmp_path), out.fileno())
    return child.wait(timeout=60)


def test_an_attached_channel_forks_from_the_same_server(server, tmp_path):
    other = prefork.Prefork.attached(server.channel.attach())
    forked_pytest(other, tmp_path)
    assert "pytest" in (tmp_path / "out.log").read_text()
    other.close()
    forked_pytest(server, tmp_path)  # closing one channel leaves the others


def test_a_client_that_leaves_mid_request_costs_the_others_nothing(server, tmp_path):
    leaving = server.channel.attach()
    with open(os.devnull, "wb") as out:
        request = {"args": ["--version"], "handover": {}, "cwd": str(tmp_path), "names": []}
        socket.send_fds(leaving, [json.dumps(request).encode()], [out.fileno()])
    leaving.close()  # before the reply: the server's send fails
    forked_pytest(server, tmp_path)
    assert "pytest" in (tmp_path / "out.log").read_text()


def test_nonsense_on_a_channel_closes_that_channel_only(server, tmp_path):
    talker = server.channel.attach()
    talker.sendall(b"{not json")
    talker.settimeout(30)
    assert talker.recv(100) == b""
    forked_pytest(server, tmp_path)


def test_a_server_that_never_answers_is_reported_gone_not_waited_for():
    ours, stuck_server = socket.socketpair()
    channel = forkserver.Channel(ours, reply_seconds=0.2)
    with pytest.raises(forkserver.ServerGone, match="did not answer within 0.2 s"):
        channel.request({"args": []}, [])
    assert channel.gone
    channel.close()
    stuck_server.close()
