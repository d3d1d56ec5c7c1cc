"""grader/syntax.py: parsing from the grader's threads never fails an honest file (python/cpython#106905)."""

import threading
from pathlib import Path

import pytest

from grader import syntax
from grader.capabilities import scan

REFERENCE = (Path(__file__).parents[2] / "solutions" / "attention.py").read_text()


class _Cycle:
    """Garbage with a finalizer: a collection during a parse runs Python code, where threads switch."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        pass


def _in_threads(work, threads: int = 4) -> list[BaseException]:
    failures: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as failure:  # noqa: BLE001 - every failure is the finding
            failures.append(failure)

    started = [threading.Thread(target=run) for _ in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return failures


def test_scanning_from_many_threads_at_once_never_fails_an_honest_file():
    def work() -> None:
        # without the lock, 4 rounds in 4 threads raised the mismatch in 5 runs of 5 on CPython 3.11
        for _ in range(12):
            garbage = [_Cycle() for _ in range(50)]
            del garbage
            assert scan(REFERENCE) == []

    assert _in_threads(work) == []


def test_a_parse_disturbed_by_a_thread_outside_the_lock_is_run_again(monkeypatch):
    # traceback formatting and third-party code parse without our lock; the counter resets at each parse
    calls = []
    real_parse = syntax.ast.parse

    def disturbed_once(source):
        calls.append(source)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=27, after=18)")
        return real_parse(source)

    monkeypatch.setattr(syntax.ast, "parse", disturbed_once)
    assert syntax.parse("x = 1\n").body
    assert len(calls) == 2


def test_any_other_system_error_is_raised(monkeypatch):
    def broken(source):
        raise SystemError("something else")

    monkeypatch.setattr(syntax.ast, "parse", broken)
    with pytest.raises(SystemError, match="something else"):
        syntax.parse("x = 1\n")


def test_a_syntax_error_is_the_sources():
    with pytest.raises(SyntaxError):
        syntax.parse("def f(:\n")
