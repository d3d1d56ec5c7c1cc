"""What the sandbox's init is told, as one typed value: grader.sandbox.spawn.command writes it on the init's
command line (to_json), grader.sandbox.boot.main reads it back as the init starts (from_json); batch's zygote
gives one to each init it forks (instructor.warm.zygote). Nothing else parses it."""

import json
from dataclasses import dataclass

from grader.sandbox.policy import Limits
from grader.sandbox.view import View


@dataclass(frozen=True)
class BootConfig:
    """fd: the worker's end of its socket; level: the isolation it starts at; uid: the worker's own uid (the
    levels in isolation.TRUSTED), or None: it keeps the init's, without capabilities where it has a view;
    limits: its limits; warm: what the worker imports before it says it is ready (grader.sandbox.worker.warm_up);
    impl: the student's file, read by the init before the view hides it (None: the source arrives another way,
    the zygote's); cgroups: the folders of the worker's cgroups, joined first; view and root: the allow-list
    view to build and where (the levels with a mount namespace); scratch: the worker's scratch folder where there
    is no view (the uid level)."""

    fd: int
    level: str
    uid: int | None
    limits: Limits
    warm: str = "all"
    impl: str | None = None
    cgroups: tuple[str, ...] = ()
    view: View | None = None
    root: str | None = None
    scratch: str | None = None

    def to_json(self) -> str:
        return json.dumps({"impl": self.impl, "fd": self.fd, "level": self.level, "uid": self.uid,
                           "limits": self.limits.to_json(), "cgroups": list(self.cgroups), "warm": self.warm,
                           "view": None if self.view is None else self.view.to_json(), "root": self.root,
                           "scratch": self.scratch})

    @classmethod
    def from_json(cls, text: str) -> "BootConfig":
        data = json.loads(text)
        return cls(fd=data["fd"], level=data["level"], uid=data["uid"], limits=Limits.from_json(data["limits"]),
                   warm=data["warm"], impl=data["impl"], cgroups=tuple(data["cgroups"]),
                   view=None if data["view"] is None else View.from_json(data["view"]), root=data["root"],
                   scratch=data["scratch"])
