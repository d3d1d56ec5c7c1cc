"""What a call into the submission can end with, as exceptions in the test process: every one is a
SubmissionError, whose `status` is the test's status when it goes uncaught. A student's own exception
arrives as a local class with the same name and builtin bases, mixed with RaisedInSubmission."""

import builtins
from typing import Any


class SubmissionError(Exception):
    """Base of every error that comes from the student's code or its process."""

    status = "failed"


class SubmissionImportError(SubmissionError):
    status = "error"


class SubmissionCrashed(SubmissionError):
    status = "error"


class SubmissionTimeout(SubmissionError):
    status = "timeout"


class FromScratchViolation(SubmissionError):
    """The student's code called what the lab forbids (lab/lab.json, forbidden)."""


class RefusedInSubmission(SubmissionError):
    """The student's code did something the worker refuses (threads, processes, numpy, ctypes)."""


class MissingName(SubmissionError):
    """The submission does not define a function or class the tests need."""


class RaisedInSubmission(SubmissionError):
    """Mixed into a local copy of the exception the student's code raised."""

    remote: dict[str, Any] | None = None

    @property
    def not_implemented(self) -> bool:
        return self.remote is not None and "NotImplementedError" in self.remote["bases"]


_BUILTIN_EXCEPTIONS = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, Exception)
}


_LOCAL_EXCEPTION_CLASSES: dict[tuple[str, tuple[type, ...]], type[RaisedInSubmission]] = {}


def local_exception_class(name: str, builtin_bases: list[str]) -> type[RaisedInSubmission]:
    """An exception class here that mirrors a remote one: same name, same builtin bases."""
    bases = tuple(_BUILTIN_EXCEPTIONS[base] for base in builtin_bases if base in _BUILTIN_EXCEPTIONS)
    bases = tuple(base for base in bases if not any(issubclass(other, base) for other in bases if other is not base))
    key = (name, bases)
    if key not in _LOCAL_EXCEPTION_CLASSES:
        _LOCAL_EXCEPTION_CLASSES[key] = type(name, (RaisedInSubmission, *bases), {"__module__": "submission"})
    return _LOCAL_EXCEPTION_CLASSES[key]


class SandboxFailed(Exception):
    """The grader could not start the process the student's code runs in (the sandbox, the interpreter,
    torch): the grader's failure, never the student's. The run ends as a grader error."""
