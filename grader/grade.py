"""Grade one submission: find the student's file, run the suite, score it."""

from pathlib import Path

from grader.capabilities import SyntaxScan, refusal, scan
from grader.launch import PLAIN, Launcher
from grader.paths import ASSIGNMENT, IMPL_NAME, find_impl
from grader.records import TestRecord
from grader.report import Flag, FlagKind, Report, Status
from grader.run import GraderError, RawRun, collect_manifest, run_pytest, suite_paths
from grader.sandbox.policy import Limits
from grader.score import build_report

MAX_IMPL_BYTES = 2_000_000  # larger files would not fit the worker's scratch, and no solution is near it
MISSING_FLAG = Flag(FlagKind.MISSING, f"no {IMPL_NAME} in the submission")


def missing_report(path: str | Path, suite: str, tests_dir: str | Path | None = None, message: str | None = None,
                   flag: Flag = MISSING_FLAG) -> Report:
    """Every test failed, with a message saying where we looked: a valid report without running anything."""
    names, tests_dir = suite_paths(suite, tests_dir)
    run = RawRun(impl=str(path), suites=names)
    run.manifest = collect_manifest(tests_dir, names, path)
    if run.manifest is None:
        raise GraderError(f"pytest could not collect the {suite} suite under {tests_dir}")
    message = message or f"no {IMPL_NAME} found in {path}: submit the file named exactly {IMPL_NAME}"
    run.results = {meta.id: TestRecord(meta.id, Status.ERROR, message) for meta in run.manifest}
    run.flags.append(flag)
    return build_report(run)


def outside_reason(path: str | Path, impl: str | Path) -> str | None:
    """Why impl may not be graded as path's (a symbolic link, or a file outside the folder), or None."""
    path, impl = Path(path), Path(impl)
    folder = path if path.is_dir() else path.parent
    links = [p for p in (impl, *impl.parents) if p.is_symlink() and (p == folder or folder in p.parents)]
    if path.is_symlink() or links:
        return f"{(links or [path])[0]} is a symbolic link"
    if impl.resolve() != folder.resolve() / impl.relative_to(folder):
        return f"{impl} resolves outside {folder}"
    return None


def grade(path: str | Path = ASSIGNMENT, suite: str = "public", timeout: float = 600.0,
          tests_dir: str | Path | None = None, limits: Limits | None = None,
          hide: tuple[str, ...] = (), launcher: Launcher = PLAIN,
          syntax_scan: SyntaxScan = scan, partial: bool = False) -> Report:
    """The report of path's file on suite, or a report of every test failed if there is none to grade.
    launcher: how the pytest child and the worker start (grader.launch; PLAIN: this process grades this one file).
    syntax_scan: what refuses a file before it runs (grader.capabilities.scan; the tests of the layers behind
    it pass one that finds nothing). Raises GraderError when the grader itself cannot grade (its sandbox does
    not start): never the student's. partial: tests_dir holds some of the lab's test files (grader.run.run_pytest)."""
    impl = find_impl(path)
    if impl is None:
        odd = next((each for each in (Path(path), Path(path) / IMPL_NAME)
                    if each.name == IMPL_NAME and (each.exists() or each.is_symlink()) and not each.is_file()), None)
        if odd is not None:  # a folder, a pipe or a dangling link by the name: never opened, which could block
            message = f"{odd} is not a file (a folder, a pipe or a broken link): submit {IMPL_NAME} itself"
            return missing_report(path, suite, tests_dir, message, Flag(FlagKind.REFUSED, f"{odd} is not a file"))
        return missing_report(path, suite, tests_dir)
    reason = outside_reason(path, impl)
    if reason:
        message = f"{reason}: submit {IMPL_NAME} itself, not a link to another file"
        return missing_report(path, suite, tests_dir, message, Flag(FlagKind.REFUSED, reason))
    size = impl.stat().st_size
    if size > MAX_IMPL_BYTES:
        message = (f"{IMPL_NAME} is {size / 1e6:.1f} MB; a solution is a few kB and at most "
                   f"{MAX_IMPL_BYTES / 1e6:g} MB is graded: remove what the lab does not need")
        return missing_report(path, suite, tests_dir, message, Flag(FlagKind.REFUSED, f"{IMPL_NAME} is too large"))
    findings = syntax_scan(impl.read_bytes())
    if findings:
        why = "cannot be read" if findings[0].unreadable else "uses what the lab does not allow"
        return missing_report(path, suite, tests_dir, refusal(findings),
                              Flag(FlagKind.REFUSED, f"{IMPL_NAME} {why}: {findings[0]}"))
    return build_report(run_pytest(impl, suite, timeout=timeout, tests_dir=tests_dir, limits=limits, hide=hide,
                                   launcher=launcher, partial=partial))
