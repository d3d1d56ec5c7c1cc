"""Code similarity across a class, with copydetect: a report for a human, never a change of score.

`batch --similarity` compares every student's attention.py with every other one, with the stubs as
boilerplate (the given code every submission shares), and writes

- OUTPUT-similarity.html: the pairs, side by side with the shared code highlighted, one self-contained
  page (inline CSS, no script, nothing from a CDN: it opens offline), every student-controlled string
  escaped (a folder named `evil<img src=x onerror=alert(1)>` is text);
- OUTPUT-similarity.csv: the pairs above the display threshold, most similar first;

both readable by you only (0600). A file over MAX_BYTES is listed, not compared; the comparison runs in a
child process stopped after TIME_LIMIT seconds. Each student of a pair at or above the flag threshold gets
the flag `similar-to: OTHER (NN%)`. A flag is a reason to read two files, not a verdict: a short assignment
done from the same handout gives honest pairs too. batch runs it last, after the gradebook is written
(`flag_class`): whatever it does, the grades stand.
"""

import html
import multiprocessing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.paths import STUB_FILE
from grader.report import Flag, FlagKind, Report
from instructor import csvsafe
from instructor.private import open_private, write_private

STUBS = STUB_FILE
DISPLAY_THRESHOLD = 0.33
FLAG_THRESHOLD = 0.80
MAX_BYTES = 200 * 1024  # a file larger than this is no attention.py: listed, not compared
TIME_LIMIT = 600.0  # seconds for the whole comparison


class SimilarityTimeout(RuntimeError):
    """The comparison did not finish within its time limit."""


@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    first_share: float  # fraction of first's code found in second's
    second_share: float
    overlap_tokens: int
    first_code: str = field(default="", compare=False, repr=False)  # escaped HTML, copied code highlighted
    second_code: str = field(default="", compare=False, repr=False)

    @property
    def similarity(self) -> float:
        return max(self.first_share, self.second_share)


def too_large(files: Mapping[str, str | Path], max_bytes: int = MAX_BYTES) -> dict[str, int]:
    """{student: size in bytes} of the files over max_bytes."""
    sizes = {student: Path(path).stat().st_size for student, path in files.items()}
    return {student: size for student, size in sizes.items() if size > max_bytes}


def _detect(files: dict[str, str], boilerplate: str, display: float) -> list[Pair]:
    """copydetect over files (runs in the child process)."""
    from copydetect import CopyDetector

    detector = CopyDetector(extensions=["py"], display_t=display, autoopen=False, silent=True)
    owner: dict[str, str] = {}
    for student, path in sorted(files.items()):
        detector.add_file(path)
        owner[path] = student
    detector.add_file(boilerplate, type="boilerplate")
    detector.run()
    return [
        Pair(owner[first], owner[second], float(first_share), float(second_share), int(overlap), code1, code2)
        for first_share, second_share, first, second, code1, code2, overlap in detector.get_copied_code_list()
    ]


def compare(files: Mapping[str, str | Path], html_path: Path, boilerplate: Path = STUBS,
            display: float = DISPLAY_THRESHOLD, max_bytes: int = MAX_BYTES,
            time_limit: float = TIME_LIMIT) -> list[Pair]:
    """Pairs of {student: attention.py} above `display`, most similar first; writes the HTML report.
    Files over max_bytes are left out (and listed in the report). Raises SimilarityTimeout after time_limit."""
    skipped = too_large(files, max_bytes)
    compared = {student: str(path) for student, path in files.items() if student not in skipped}
    pairs: list[Pair] = []
    if len(compared) >= 2:
        context = multiprocessing.get_context("spawn")  # batch has threads: no fork
        with context.Pool(1) as pool:
            pending = pool.apply_async(_detect, (compared, str(boilerplate), display))
            try:
                pairs = pending.get(timeout=time_limit)
            except multiprocessing.TimeoutError:
                pool.terminate()
                raise SimilarityTimeout(f"the similarity check took over {time_limit:g} s: stopped, no report "
                                        "(compare fewer students, or raise similarity.TIME_LIMIT)") from None
    pairs.sort(key=lambda pair: (-pair.similarity, pair.first, pair.second))
    write_private(html_path, render_html(pairs, skipped, len(compared), max_bytes))
    return pairs


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }
.pair { display: flex; gap: 1em; } .pair > div { flex: 1; min-width: 0; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
.highlight-red { background: #fcc; } .highlight-green { background: #cfc; }
"""


def render_html(pairs: Sequence[Pair], skipped: Mapping[str, int], compared: int, max_bytes: int) -> str:
    """One self-contained page: no script, no external resource, every name escaped. The code is
    copydetect's, escaped by it, with only its highlight spans added."""
    def e(text: Any) -> str:
        return html.escape(str(text), quote=True)

    parts = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
             "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">",
             f"<title>Code similarity</title><style>{STYLE}</style></head><body>",
             f"<h1>Code similarity</h1><p>{compared} files compared, the stubs as shared boilerplate; "
             f"{len(pairs)} pairs above the display threshold. A pair is a reason to read two files, "
             "not a verdict.</p>"]
    if skipped:
        parts.append(f"<h2>Not compared (over {max_bytes // 1024} KB)</h2><ul>")
        parts += [f"<li>{e(student)}: {size} bytes</li>" for student, size in sorted(skipped.items())]
        parts.append("</ul>")
    parts.append("<table><tr><th>student</th><th>other</th><th>share of student in other</th>"
                 "<th>share of other in student</th><th>overlapping tokens</th></tr>")
    for index, pair in enumerate(pairs):
        parts.append(f"<tr><td><a href='#pair-{index}'>{e(pair.first)}</a></td><td>{e(pair.second)}</td>"
                     f"<td>{pair.first_share:.0%}</td><td>{pair.second_share:.0%}</td>"
                     f"<td>{pair.overlap_tokens}</td></tr>")
    parts.append("</table>")
    for index, pair in enumerate(pairs):
        parts.append(f"<h2 id='pair-{index}'>{e(pair.first)} and {e(pair.second)} ({pair.similarity:.0%})</h2>"
                     f"<div class='pair'><div><h3>{e(pair.first)}</h3><pre>{pair.first_code}</pre></div>"
                     f"<div><h3>{e(pair.second)}</h3><pre>{pair.second_code}</pre></div></div>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_pairs(pairs: Sequence[Pair], path: Path) -> None:
    """The pairs as CSV rows, shares to three decimals."""
    with open_private(path, newline="") as handle:
        writer = csvsafe.writer(handle)
        writer.writerow(["student", "other", "share_of_student_in_other", "share_of_other_in_student",
                         "overlapping_tokens"])
        for pair in pairs:
            writer.writerow([pair.first, pair.second, f"{pair.first_share:.3f}", f"{pair.second_share:.3f}",
                             pair.overlap_tokens])


def flags(pairs: Sequence[Pair], threshold: float = FLAG_THRESHOLD) -> dict[str, list[Flag]]:
    """{student: [flag, ...]} for every pair at or above threshold, on both of its students."""
    found: dict[str, list[Flag]] = {}
    for pair in pairs:
        if pair.similarity >= threshold:
            percent = f"{pair.similarity:.0%}"
            found.setdefault(pair.first, []).append(Flag(FlagKind.SIMILAR, f"{pair.second} ({percent})"))
            found.setdefault(pair.second, []).append(Flag(FlagKind.SIMILAR, f"{pair.first} ({percent})"))
    return found


def flag_class(files: Mapping[str, str | Path], reports: dict[str, Report], output: str | Path) -> bool:
    """batch's last step: compare the class's files, write OUTPUT-similarity.html and .csv, add the flags to
    reports. True when a flag was added (batch then rewrites the gradebook it has already written)."""
    stem = Path(output).with_suffix("").as_posix()
    pairs = compare(files, Path(stem + "-similarity.html"))
    write_pairs(pairs, Path(stem + "-similarity.csv"))
    found = flags(pairs)
    for student, student_flags in found.items():
        reports[student].flags = reports[student].flags + student_flags
    return bool(found)
