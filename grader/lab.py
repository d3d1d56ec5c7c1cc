"""The lab the grader grades, as data: the folder lab/ beside grader/ describes it. lab/lab.json: its title,
the student's file and module, the tasks and their points, what it forbids; lab/allowed-use.json: what the
student's file may use; lab/allowed-names.json: the names generated from torch for that. grader/ holds no
word of any one lab: another lab is another lab/ folder (and its suites) beside the same grader/."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Lab:
    folder: Path
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def _read(self, name: str) -> Any:
        if name not in self._cache:
            self._cache[name] = json.loads((self.folder / name).read_text(encoding="utf-8"))
        return self._cache[name]

    @property
    def description(self) -> dict[str, Any]:
        """lab/lab.json."""
        return self._read("lab.json")

    @property
    def title(self) -> str:
        return str(self.description["title"])

    @property
    def name(self) -> str:
        """How the course calls it (its number, say)."""
        return str(self.description["name"])

    @property
    def file(self) -> str:
        """The student's file name."""
        return str(self.description["file"])

    @property
    def module(self) -> str:
        """The module name the student's file is imported as."""
        return str(self.description["module"])

    @property
    def forbidden(self) -> dict[str, Any]:
        """What the lab forbids the student's code to call: words for the messages, and the parts of the
        names of the kernels and modules that compute it."""
        return dict(self.description["forbidden"])

    @property
    def policy(self) -> dict[str, Any]:
        """lab/allowed-use.json."""
        return self._read("allowed-use.json")

    @property
    def names(self) -> dict[str, Any]:
        """lab/allowed-names.json."""
        return self._read("allowed-names.json")


LAB = Lab(Path(__file__).resolve().parent.parent / "lab")
