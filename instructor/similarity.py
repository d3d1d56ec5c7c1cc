"""Code similarity across a class, with copydetect: a report for a human, never a change of score.

`batch --similarity` compares every student's attention.py with every other one, with the stubs as
boilerplate (the given code every submission shares), and writes

- OUTPUT-similarity.html: the pairs, side by side with the shared code highlighted, one self-contained
  page (inline CSS, no script, nothing from a CDN: it opens offline), every student-controlled string
  escaped (a folder named `evil<img src=x onerror=alert(1)>` is text);
- OUTPUT-similarity.csv: the pairs above the display threshold, most similar first;

both readable by you only (0600). Like Gradescope's similarity page, the HTML page starts with one row per
student (their closest match), puts students whose files are near-identical to each other (NEAR_IDENTICAL)
into one cluster shown once, and stays bounded (MAX_SIDE_BY_SIDE pairs shown side by side, each side cut at
MAX_CODE_CHARS; every pair is in the CSV). A file over MAX_BYTES, or one that is not UTF-8 text, is listed
with the reason, not compared; the comparison runs in a child process stopped after TIME_LIMIT seconds.
Each student of a pair at or above the flag threshold gets one flag, `similar-to: OTHER (NN%)` naming the
closest (`and N other(s)` when more reach it). A flag is a reason to read two files, not a verdict: a short
assignment done from the same handout gives honest pairs too. batch runs it last, after the gradebook is written
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
NEAR_IDENTICAL = 0.90  # pairs at or above this join one cluster: 40 copies of one file are one finding, not 780
MAX_SIDE_BY_SIDE = 40  # pairs shown with their code; the page stays a few MB whatever the class
MAX_TABLE_PAIRS = 500  # rows of the pairs table (all of them are in the CSV)
MAX_CODE_CHARS = 40_000  # of one side's highlighted code


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


def skipped_files(files: Mapping[str, str | Path], max_bytes: int = MAX_BYTES) -> dict[str, str]:
    """{student: why their file is not compared}: over max_bytes, or not UTF-8 text (copydetect would read it
    with its own guess at an encoding, or fail on it)."""
    large = too_large(files, max_bytes)
    why = {student: f"{size} bytes, over {max_bytes // 1024} KB" for student, size in large.items()}
    for student, path in files.items():
        if student not in why:
            try:
                Path(path).read_bytes().decode("utf-8")
            except UnicodeDecodeError as error:
                why[student] = f"not UTF-8 text (byte {error.start}: {error.object[error.start:error.start + 1]!r})"
            except OSError as error:
                why[student] = f"unreadable ({error.strerror or error})"
    return why


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
    skipped = skipped_files(files, max_bytes)
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
    write_private(html_path, render_html(pairs, skipped, sorted(compared)))
    return pairs


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }
.pair { display: flex; gap: 1em; } .pair > div { flex: 1; min-width: 0; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
.highlight-red { background: #fcc; } .highlight-green { background: #cfc; }
"""


@dataclass(frozen=True)
class Closest:
    """One student's row: the most similar other file, and the cluster the student belongs to (0: none)."""

    student: str
    other: str  # "" when no pair of theirs reached the display threshold
    similarity: float
    cluster: int


def clusters(pairs: Sequence[Pair], threshold: float = NEAR_IDENTICAL) -> list[list[str]]:
    """Groups of students joined by pairs at or above threshold (each a connected component), largest first."""
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while parent.setdefault(name, name) != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for pair in pairs:
        if pair.similarity >= threshold:
            parent[root(pair.first)] = root(pair.second)
    groups: dict[str, list[str]] = {}
    for name in parent:
        groups.setdefault(root(name), []).append(name)
    found = [sorted(group) for group in groups.values() if len(group) > 1]
    return sorted(found, key=lambda group: (-len(group), group))


def closest(pairs: Sequence[Pair], students: Sequence[str], groups: Sequence[Sequence[str]]) -> list[Closest]:
    """One row per student compared, most similar first."""
    best: dict[str, tuple[float, str]] = {}
    for pair in pairs:
        for me, other in ((pair.first, pair.second), (pair.second, pair.first)):
            if pair.similarity > best.get(me, (-1.0, ""))[0]:
                best[me] = (pair.similarity, other)
    cluster_of = {name: number for number, group in enumerate(groups, start=1) for name in group}
    rows = [Closest(student, best.get(student, (0.0, ""))[1], best.get(student, (0.0, ""))[0],
                    cluster_of.get(student, 0)) for student in students]
    return sorted(rows, key=lambda row: (-row.similarity, row.student))


def shown_pairs(pairs: Sequence[Pair], groups: Sequence[Sequence[str]], limit: int = MAX_SIDE_BY_SIDE) -> list[Pair]:
    """The pairs worth reading side by side: within a cluster only its most similar pair (its members are
    near-identical: one reading covers them), every other pair as is; most similar first, at most limit."""
    cluster_of = {name: number for number, group in enumerate(groups) for name in group}
    seen: set[int] = set()
    chosen = []
    for pair in pairs:  # most similar first
        group = cluster_of.get(pair.first)
        if group is not None and group == cluster_of.get(pair.second):
            if group in seen:
                continue
            seen.add(group)
        chosen.append(pair)
    return chosen[:limit]


def _cut(code: str, limit: int = MAX_CODE_CHARS) -> str:
    """copydetect's escaped, highlighted code cut at limit characters, never inside a tag or an entity."""
    if len(code) <= limit:
        return code
    cut = code[:limit]
    cut = cut[:max(cut.rfind("\n"), 0)]  # a line ends before any span or entity that the cut would split
    opened = cut.count("<span") - cut.count("</span>")
    return cut + "</span>" * max(opened, 0) + f"\n… ({len(code) - len(cut)} more characters not shown)"


def render_html(pairs: Sequence[Pair], skipped: Mapping[str, str], students: Sequence[str]) -> str:
    """One self-contained page of bounded size: no script, no external resource, every name escaped. The code
    is copydetect's, escaped by it, with only its highlight spans added."""
    def e(text: Any) -> str:
        return html.escape(str(text), quote=True)

    groups = clusters(pairs)
    parts = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
             "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">",
             f"<title>Code similarity</title><style>{STYLE}</style></head><body>",
             f"<h1>Code similarity</h1><p>{len(students)} files compared, the stubs as shared boilerplate; "
             f"{len(pairs)} pairs above {DISPLAY_THRESHOLD:.0%}, {len(groups)} cluster(s) of near-identical files "
             f"({NEAR_IDENTICAL:.0%} or more). A pair is a reason to read two files, not a verdict.</p>"]
    if skipped:
        parts.append("<h2>Not compared</h2><ul>")
        parts += [f"<li>{e(student)}: {e(why)}</li>" for student, why in sorted(skipped.items())]
        parts.append("</ul>")
    if groups:
        parts.append("<h2>Clusters of near-identical files</h2><ol>")
        parts += [f"<li>{len(group)} students: {e(', '.join(group))}</li>" for group in groups]
        parts.append("</ol>")
    parts.append("<h2>Each student's closest match</h2><table><tr><th>student</th><th>closest match</th>"
                 "<th>similarity</th><th>cluster</th></tr>")
    for row in closest(pairs, students, groups):
        other = e(row.other) if row.other else f"none above {DISPLAY_THRESHOLD:.0%}"
        parts.append(f"<tr><td>{e(row.student)}</td><td>{other}</td><td>{row.similarity:.0%}</td>"
                     f"<td>{row.cluster or ''}</td></tr>")
    parts.append("</table>")
    shown = shown_pairs(pairs, groups)
    anchors = {id(pair): index for index, pair in enumerate(shown)}
    parts.append(f"<h2>Pairs</h2><p>{min(len(pairs), MAX_TABLE_PAIRS)} of {len(pairs)} (all in the CSV); "
                 f"{len(shown)} shown side by side below (one per cluster).</p><table><tr><th>student</th>"
                 "<th>other</th><th>share of student in other</th><th>share of other in student</th>"
                 "<th>overlapping tokens</th></tr>")
    for pair in pairs[:MAX_TABLE_PAIRS]:
        name = e(pair.first)
        if id(pair) in anchors:
            name = f"<a href='#pair-{anchors[id(pair)]}'>{name}</a>"
        parts.append(f"<tr><td>{name}</td><td>{e(pair.second)}</td><td>{pair.first_share:.0%}</td>"
                     f"<td>{pair.second_share:.0%}</td><td>{pair.overlap_tokens}</td></tr>")
    parts.append("</table>")
    for index, pair in enumerate(shown):
        parts.append(f"<h2 id='pair-{index}'>{e(pair.first)} and {e(pair.second)} ({pair.similarity:.0%})</h2>"
                     f"<div class='pair'><div><h3>{e(pair.first)}</h3><pre>{_cut(pair.first_code)}</pre></div>"
                     f"<div><h3>{e(pair.second)}</h3><pre>{_cut(pair.second_code)}</pre></div></div>")
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
    """{student: [flag]} for every student of a pair at or above threshold: one flag naming the closest other
    student, and how many more reach the threshold (a cluster of 40 copies gives 40 flags, not 1560)."""
    others: dict[str, list[tuple[float, str]]] = {}
    for pair in pairs:
        if pair.similarity >= threshold:
            others.setdefault(pair.first, []).append((pair.similarity, pair.second))
            others.setdefault(pair.second, []).append((pair.similarity, pair.first))
    found: dict[str, list[Flag]] = {}
    for student, matches in others.items():
        similarity, other = min(matches, key=lambda match: (-match[0], match[1]))  # the closest; by name on a tie
        more = f" and {len(matches) - 1} other(s)" if len(matches) > 1 else ""
        found[student] = [Flag(FlagKind.SIMILAR, f"{other} ({similarity:.0%}){more}")]
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
