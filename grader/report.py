"""The grader's report, typed: each test's result, each task's score, the totals and the flags.

Every report is made by make_report, whether the tests ran or not. to_json() gives the JSON every
output and every stored report is made of (`--format json`, batch's reports); from_json() reads it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from grader.tasks import BY_ID, task_order

# What plugin.explain writes in the message of a test that reached a NotImplementedError.
NOT_IMPLEMENTED_WORDS = "not implemented yet"


class Status(Enum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_IMPLEMENTED = "not_implemented"  # the code reached a NotImplementedError: a stub left as given
    ERROR = "error"  # the submission could not run the test (import error, crash, no result)
    TIMEOUT = "timeout"

    @property
    def reported(self) -> str:
        """The status in the JSON outputs, which know passed, failed, error and timeout (a stub left as given
        is a failed test there, with "detail": "not_implemented" beside it)."""
        return Status.FAILED.value if self is Status.NOT_IMPLEMENTED else self.value

    @classmethod
    def from_json(cls, status: str, detail: str | None = None) -> Status:
        return cls.NOT_IMPLEMENTED if detail == cls.NOT_IMPLEMENTED.value else cls(status)


class FlagKind(Enum):
    """What a flag tells the instructor; the value starts the flag's text in the JSON."""

    MISSING = "missing"  # no student's file: nothing was run
    REFUSED = "refused"  # a file the grader will not run (a link, outside the folder, not allowed, unreadable)
    TAMPERING = "tampering"  # the grading files or the report channel were interfered with
    FROM_SCRATCH = "from-scratch"  # the code called what the lab forbids
    SANDBOX = "sandbox"  # the worker refused something the code did
    SIMILAR = "similar-to"  # another student's code is very similar (instructor.similarity)
    GRADER_ERROR = "grader error"  # the grader itself failed: not the student's fault
    OUT_OF_TIME = "out of time"  # the whole grading did not finish in its time limit
    OTHER = "other"


# Flags whose JSON text is the text alone, without "KIND: ".
UNLABELLED = frozenset({FlagKind.OTHER})


@dataclass(frozen=True)
class Flag:
    kind: FlagKind
    text: str

    def to_json(self) -> str:
        return self.text if self.kind in UNLABELLED else f"{self.kind.value}: {self.text}"

    def __str__(self) -> str:
        return self.to_json()

    @classmethod
    def from_json(cls, text: str) -> Flag:
        for kind in FlagKind:
            if kind not in UNLABELLED and text.startswith(f"{kind.value}: "):
                return cls(kind, text[len(kind.value) + 2:])
        return cls(FlagKind.OTHER, text)


@dataclass
class TestResult:
    __test__ = False  # a result, not a test class for pytest to collect

    id: str
    name: str
    task: str
    suite: str
    status: Status
    message: str
    score: float
    max_score: float
    doc: str = ""
    file: str = ""
    line: int = 0
    output: str = ""

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "task": self.task, "suite": self.suite, "doc": self.doc,
                "file": self.file, "line": self.line, "score": self.score, "max_score": self.max_score,
                "status": self.status.reported, "message": self.message, "output": self.output,
                **({"detail": self.status.value} if self.status is Status.NOT_IMPLEMENTED else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestResult:
        fields = {key: data[key] for key in ("id", "name", "task", "suite", "doc", "file", "line", "score",
                                             "max_score", "message", "output")}
        return cls(status=Status.from_json(data["status"], data.get("detail")), **fields)


@dataclass
class TaskScore:
    title: str
    bonus: bool
    score: float
    max_score: float

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "bonus": self.bonus, "score": self.score, "max_score": self.max_score}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskScore:
        return cls(data["title"], data["bonus"], data["score"], data["max_score"])


@dataclass
class Report:
    score: float
    max_score: float
    tasks: dict[str, TaskScore]
    tests: list[TestResult]
    flags: list[Flag]
    suite: str
    impl: str
    execution_time: float
    pytest_json: dict[str, Any] | None = None  # pytest-json-report's own report of the run
    bonus_score: float | None = None  # None: the suite has no bonus test
    bonus_max_score: float | None = None

    @property
    def full_marks(self) -> bool:
        return self.score == self.max_score > 0

    @property
    def failure(self) -> Flag | None:
        """Why no test has a result, for a report of a grading that failed before any test ran."""
        if self.tests:
            return None
        return next((flag for flag in self.flags if flag.kind in (FlagKind.GRADER_ERROR, FlagKind.OUT_OF_TIME)), None)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "score": self.score,
            "max_score": self.max_score,
            "tasks": {task_id: task.to_json() for task_id, task in self.tasks.items()},
            "tests": [test.to_json() for test in self.tests],
            "flags": [flag.to_json() for flag in self.flags],
            "suite": self.suite,
            "impl": self.impl,
            "execution_time": self.execution_time,
        }
        if self.pytest_json is not None:
            data["pytest_json"] = self.pytest_json
        if self.bonus_score is not None:
            data["bonus_score"] = self.bonus_score
            data["bonus_max_score"] = self.bonus_max_score
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Report:
        return cls(
            score=data["score"],
            max_score=data["max_score"],
            tasks={task_id: TaskScore.from_json(task) for task_id, task in data["tasks"].items()},
            tests=[TestResult.from_json(test) for test in data["tests"]],
            flags=[Flag.from_json(flag) for flag in data["flags"]],
            suite=data["suite"],
            impl=data["impl"],
            execution_time=data["execution_time"],
            pytest_json=data.get("pytest_json"),
            bonus_score=data.get("bonus_score"),
            bonus_max_score=data.get("bonus_max_score"),
        )


def _round(value: float) -> float:
    return round(value + 0.0, 2)


def _task_scores(tests: list[TestResult]) -> dict[str, TaskScore]:
    tasks: dict[str, TaskScore] = {}
    for test in tests:
        known = BY_ID.get(test.task)
        task = tasks.setdefault(test.task, TaskScore(known.title if known else test.task,
                                                     known.bonus if known else False, 0.0, 0.0))
        task.score += test.score
        task.max_score += test.max_score
    for task in tasks.values():
        task.score, task.max_score = _round(task.score), _round(task.max_score)
    return tasks


def make_report(tests: list[TestResult], flags: list[Flag], suite: str, impl: str, execution_time: float = 0.0,
                pytest_json: dict[str, Any] | None = None) -> Report:
    """The one way a report is made: tests in task order (public before hidden), each task's sum,
    the core total, and the bonus total when there are bonus tests."""
    tests = sorted(tests, key=lambda test: (task_order(test.task), test.suite != "public"))
    tasks = _task_scores(tests)
    core = [task for task in tasks.values() if not task.bonus]
    bonus = [task for task in tasks.values() if task.bonus]
    return Report(
        score=_round(sum(task.score for task in core)),
        max_score=_round(sum(task.max_score for task in core)),
        tasks=tasks, tests=tests, flags=flags, suite=suite, impl=impl,
        execution_time=round(execution_time, 2), pytest_json=pytest_json,
        bonus_score=_round(sum(task.score for task in bonus)) if bonus else None,
        bonus_max_score=_round(sum(task.max_score for task in bonus)) if bonus else None,
    )


def failure_report(kind: FlagKind, why: str, suite: str, impl: str) -> Report:
    """The report of a grading that produced no test result: no points, and the flag that says why."""
    return make_report([], [Flag(kind, why)], suite, impl)
