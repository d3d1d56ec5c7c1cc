"""The lab the grader grades, as data: the folder lab/ beside grader/ describes it (lab/allowed-use.json: what
the student's file may use; lab/allowed-names.json: the attribute names generated from torch for it)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.paths import REPO


@dataclass(frozen=True)
class Lab:
    folder: Path
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def _read(self, name: str) -> Any:
        if name not in self._cache:
            self._cache[name] = json.loads((self.folder / name).read_text(encoding="utf-8"))
        return self._cache[name]

    @property
    def policy(self) -> dict[str, Any]:
        """lab/allowed-use.json."""
        return self._read("allowed-use.json")

    @property
    def names(self) -> dict[str, Any]:
        """lab/allowed-names.json."""
        return self._read("allowed-names.json")


LAB = Lab(REPO / "lab")
