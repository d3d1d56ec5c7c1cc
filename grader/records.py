"""The records the pytest child signs and the grader reads back (grader.signing), as typed values.

`TestMeta` is one collected test (the run's manifest is a list of them); `TestRecord` is one test's
result. Each travels as JSON (`to_json`) and is read back whole (`from_json`); a record missing a field
is refused (KeyError), never half read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from grader.report import Status


@dataclass(frozen=True)
class TestMeta:
    """A collected test: its id and name, the task and suite it counts for, its points, and where it is."""

    __test__ = False  # not a pytest test class

    id: str
    name: str
    task: str
    points: float
    suite: str
    doc: str = ""
    file: str = ""
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestMeta:
        return cls(id=str(data["id"]), name=str(data["name"]), task=str(data["task"]), points=float(data["points"]),
                   suite=str(data["suite"]), doc=str(data.get("doc", "")), file=str(data.get("file", "")),
                   line=int(data.get("line", 0)))


@dataclass(frozen=True)
class TestRecord:
    """A test's result: its status (a stub left as given travels as not_implemented, never as words in the
    message), the message a student reads, the flags its calls raised, what the student's code printed."""

    __test__ = False

    id: str
    status: Status
    message: str = ""
    duration: float = 0.0
    flags: list[str] = field(default_factory=list)
    output: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status.value, "message": self.message, "duration": self.duration,
                "flags": list(self.flags), "output": self.output}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestRecord:
        return cls(id=str(data["id"]), status=Status(data["status"]), message=str(data.get("message", "")),
                   duration=float(data.get("duration", 0.0)), flags=[str(f) for f in data.get("flags", [])],
                   output=str(data.get("output", "")))
