"""Every limit on student code, in one table, read from the environment in one place."""

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from grader.paths import Env

MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The worker's limits (the address space is added to its size at start-up) and the call timeouts.

    Timeouts count wall time less the time the worker waited for a CPU (grader.sandbox.clock): a busy machine
    does not turn a correct call into a timeout, and code that sleeps is stopped as soon as code that computes.
    """

    address_space_mb: int = 3072
    tree_memory_mb: int = 1024
    processes: int = 64
    file_size_mb: int = 16
    open_files: int = 256
    cpu_seconds: int = 900
    scratch_mb: int = 64
    call_seconds: float = 5.0
    import_seconds: float = 60.0
    start_seconds: float = 180.0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping) -> "Limits":
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


ENVIRONMENT = {  # setting -> the variable that overrides it
    "address_space_mb": Env.WORKER_MEMORY_MB,
    "tree_memory_mb": Env.SANDBOX_MEMORY_MB,
    "call_seconds": Env.CALL_TIMEOUT,
    "import_seconds": Env.IMPORT_TIMEOUT,
}


# The lowest value of each setting the environment may give: below it, correct code would fail (run out of memory,
# time out) and the student would be blamed for the grader's setting. tests/tooling/test_policy.py grades the
# reference at these floors.
FLOORS = {"address_space_mb": 256, "tree_memory_mb": 384, "call_seconds": 1.0, "import_seconds": 2.0}


class SettingError(ValueError):
    """A GRADER_* setting that cannot grade correct code: the one line says which and what to give."""


def number(text: str) -> float:
    """float(text), or NaN for text that is not a number: one range check then refuses both."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def limits_from(environ: Mapping[str, str], base: Limits = Limits()) -> Limits:
    """base with the settings environ overrides (GRADER_CALL_TIMEOUT=10, ...); SettingError for a value that is
    not a number or is below its floor."""
    changes: dict[str, Any] = {}
    for name, variable in ENVIRONMENT.items():
        text = environ.get(variable)
        if not text:
            continue
        value = number(text)
        if not (math.isfinite(value) and value >= FLOORS[name]):
            raise SettingError(f"{variable}={text!r}: give a number of at least {FLOORS[name]:g} "
                               f"(the default is {getattr(base, name):g}), or unset it")
        changes[name] = int(value) if type(getattr(base, name)) is int else value
    return replace(base, **changes)


DEFAULT = Limits()


def set_rlimit(which: int, value: int) -> None:
    """Set resource limit `which` (soft and hard) to value, or to the machine's own hard limit where that is lower
    already (a login node's ulimit): a hard limit is never raised, which an unprivileged process may not do."""
    import resource  # POSIX only; called where the sandbox sets limits

    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))
