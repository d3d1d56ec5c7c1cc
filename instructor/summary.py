"""The end of a batch: a few lines saying how the class went and where the files are."""

import statistics
from collections.abc import Mapping
from pathlib import Path

from grader.report import FlagKind, Report

NOT_COUNTED = (FlagKind.MISSING, FlagKind.GRADER_ERROR)


def reports_dir_of(output: str | Path) -> Path:
    """Where batch writes the per-student JSON reports by default: OUTPUT without .csv, plus -reports."""
    return Path(Path(output).with_suffix("").as_posix() + "-reports")


def lines(reports: Mapping[str, Report], output: str | Path, reports_dir: str | Path | None = None) -> list[str]:
    """graded, missing, not graded, flagged; the mean and median total of those graded; the files."""
    def has(report: Report, kind: FlagKind) -> bool:
        return any(flag.kind is kind for flag in report.flags)

    missing = sorted(student for student, report in reports.items() if has(report, FlagKind.MISSING))
    not_graded = sorted(student for student, report in reports.items() if has(report, FlagKind.GRADER_ERROR))
    graded = {student: report for student, report in reports.items()
              if student not in missing and student not in not_graded}
    flagged = sorted(student for student, report in graded.items() if report.flags)
    totals = [report.score for report in graded.values()]
    maximum = max((report.max_score for report in reports.values()), default=0)
    said = [f"batch: {len(reports)} students: {len(graded)} graded, {len(missing)} missing (no attention.py), "
            f"{len(not_graded)} not graded (grader error: rerun them alone), {len(flagged)} graded with flags"]
    if totals:
        said.append(f"  total of the graded: mean {statistics.fmean(totals):.1f}, median "
                    f"{statistics.median(totals):g} (out of {maximum:g})")
    if not_graded:
        said.append(f"  not graded: {', '.join(not_graded)}")
    if flagged:
        said.append(f"  flagged (read their reports): {', '.join(flagged)}")
    stem = Path(output).with_suffix("").as_posix()
    files = [Path(output), Path(reports_dir or reports_dir_of(output))]
    files += [path for path in (Path(stem + "-class.html"), Path(stem + "-class.csv"), Path(stem + "-similarity.html"),
                                Path(stem + "-similarity.csv")) if path.exists()]
    said.append(f"  files: {', '.join(str(path) for path in files)}")
    return said
