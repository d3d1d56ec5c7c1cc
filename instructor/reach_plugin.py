"""pytest plugin for instructor.reach.record: the names of the student's module each test file reads.

Loaded with `-p instructor.reach_plugin` in a run of the suites on the reference; writes {test file: [names]}
as JSON to the file REACH_OUT names."""

import json
import os
from collections.abc import Generator
from typing import Any

import pytest

from grader.sandbox import proxy

_read: dict[str, set[str]] = {}
_running: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    original = proxy.Submission.__getattr__

    def noting(submission: proxy.Submission, name: str) -> Any:
        if _running and not name.startswith("_"):
            _read.setdefault(_running[-1], set()).add(name)
        return original(submission, name)

    proxy.Submission.__getattr__ = noting  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    _running.append(item.nodeid.split("::")[0])
    yield
    _running.pop()


def pytest_unconfigure(config: pytest.Config) -> None:
    with open(os.environ["REACH_OUT"], "w") as out:
        json.dump({file: sorted(names) for file, names in _read.items()}, out)
