"""Shared by every suite: the `submission` fixture and the grading hooks (see grader/plugin.py)."""

from grader.plugin import (  # noqa: F401  (pytest finds hooks and fixtures by name)
    _watch_submission,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_json_modifyreport,
    pytest_json_runtest_metadata,
    pytest_runtest_makereport,
    pytest_runtest_protocol,
    pytest_unconfigure,
    submission,
)
