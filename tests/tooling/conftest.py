"""What several tooling test files share: the class of attacking submissions graded once by batch per session
(tests/tooling/test_attacks_on_*.py and test_from_scratch_rule.py read its reports), the reference and the stubs
graded once on the public suite, and the mark of the tests that need not run again at a weaker sandbox level
(`make sandbox-user`).

Under `make tooling`'s pytest-xdist a session fixture is built once per worker that needs it, so the files that
use one run on one worker (pytest_xdist_make_scheduler): every other file is a unit of its own, which keeps its
module fixtures (a batch of the fresh corpus, a checkout) built once."""

import functools
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.report import Report
from grader.sandbox import isolation as sandbox
from tests.tooling.misbehaving import HIDING_FROM_THE_COUNTER, REFERENCE, STUBS, TAMPERING

# The toy lab (test_toy_lab.py) is a fixture: its suites are graded in a copy, never collected here.
collect_ignore = ["toylab"]

HONEST = {"honest_reference": REFERENCE, "honest_reference_too": REFERENCE, "honest_stubs": STUBS}
# The guard and the meters run inside the worker, the same code at every isolation level: the attacks on them
# are graded at the namespaces level (root, `make tooling`) only; `make sandbox-user` repeats what the level
# changes (the view, the processes, the files, the limits).
GUARD_AND_METERS = ("sdpa_in_a_thread", "sdpa_with_modes_popped", "numpy_round_trip", *HIDING_FROM_THE_COUNTER)
same_at_every_level = pytest.mark.skipif(
    sandbox.level() != "namespaces",
    reason="the guard and the meters run inside the worker, the same at every level: graded at namespaces only")


@pytest.fixture(scope="session")
def reference_public() -> Report:
    """grade() of the reference (solutions/) on the public suite with the default settings, graded once per
    session for the tests that only read such a report (its renderings, or a comparison with another launcher)."""
    from grader.grade import grade
    from grader.paths import SOLUTIONS

    return grade(SOLUTIONS, "public")


@pytest.fixture(scope="session")
def stubs_public() -> Report:
    """The same for the stubs (assignment/)."""
    from grader.grade import grade
    from grader.paths import ASSIGNMENT

    return grade(ASSIGNMENT, "public")


def tamper_environment(patch: pytest.MonkeyPatch, root: Path) -> None:
    """The settings the attacked class is graded with: short calls, a small worker, and the scope and target
    the attacks aim at (tests/tooling/misbehaving.py)."""
    patch.setenv("GRADER_CALL_TIMEOUT", "2")
    patch.setenv("GRADER_WORKER_MEMORY_MB", "512")
    patch.setenv("TAMPER_SCOPE", str(root / "class"))
    patch.setenv("TAMPER_TARGET", str(root / "results.json"))


@dataclass
class AttackedClass:
    root: Path  # root/class holds the students; root/results.json is what the daemon attack aims at
    reports: dict[str, Report]

    def __getitem__(self, name: str) -> Report:
        return self.reports[name]


def write_class(root: Path, names: set[str]) -> None:
    for name, files in TAMPERING.items():
        if name in names:
            for relative, text in files.items():
                (root / name / relative).parent.mkdir(parents=True, exist_ok=True)
                (root / name / relative).write_text(text)
    for name, text in {**HONEST, **HIDING_FROM_THE_COUNTER}.items():
        if name in names:
            (root / name).mkdir()
            (root / name / "attention.py").write_text(text)
    (root / "symlink_to_classmate").mkdir()
    (root / "symlink_to_classmate" / "attention.py").symlink_to(root / "honest_reference" / "attention.py")


@pytest.fixture(scope="session")
def attacked_class(tmp_path_factory) -> AttackedClass:
    """One submission per class of attack (tests/tooling/misbehaving.py, TAMPERING) with honest classmates
    beside them, graded by batch with the syntax scan set aside (grader.capabilities, tested on its own in
    test_capabilities and test_attacks_on_grader_files): each attack meets the sandbox and the guard as if it
    got past the scan, so these tests hold the inner layers to account."""
    from instructor.batch import BATCH_LEVELS, run_batch

    if sandbox.level() == "none":
        pytest.skip("needs a sandbox (CI runs this as root, and at the user-namespace level as uid 65534)")
    root = tmp_path_factory.mktemp("tamper")
    (root / "results.json").write_text("the grader's results")
    names = set(TAMPERING) | set(HONEST) | set(HIDING_FROM_THE_COUNTER)
    if sandbox.level() != "namespaces":
        names -= set(GUARD_AND_METERS)
    (root / "class").mkdir()
    write_class(root / "class", names)
    # batch takes the namespaces and user-namespace levels (make sandbox-user) as they are; a weaker one only
    # when accepted explicitly, as --no-sandbox does
    accept = sandbox.level() not in BATCH_LEVELS
    with pytest.MonkeyPatch.context() as patch:
        tamper_environment(patch, root)
        reports = run_batch(root / "class", suite="public", jobs=2, output=root / "grades.csv", progress=False,
                            timeout=300, no_sandbox=accept, syntax_scan=lambda source: [])
    time.sleep(4)  # longer than the daemon attack waits before it writes
    return AttackedClass(root, reports)


# The session fixtures above -> their xdist group: a file that names one runs on that group's worker.
SHARED_FIXTURES = {"attacked_class": "attacked_class", "reference_public": "reference", "stubs_public": "reference"}


@functools.cache
def xdist_group(nodeid: str) -> str:
    """The group of the test file nodeid names: the group of the first shared fixture its text names, else
    the file itself."""
    file = nodeid.split("::", 1)[0]
    text = (Path(__file__).parents[2] / file).read_text()
    return next((group for name, group in SHARED_FIXTURES.items() if name in text), file)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with the files that share a session fixture in one unit. (pytest-xdist 3.8's
    xdist_group marks are lost under pytest 9, which no longer reads the node id xdist rewrites.)"""
    from xdist.scheduler import LoadFileScheduling

    class BySharedFixture(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

    return BySharedFixture(config, log)


def pytest_configure(config):
    config.addinivalue_line("markers", "each_level: a property the sandbox level changes; `make sandbox-user` "
                                       "runs these again as uid 65534, at the user-namespace level")

