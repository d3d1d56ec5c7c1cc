"""Code similarity across a class, with copydetect: a report for a human, never a change of score.

`batch --similarity` compares every student's attention.py with every other one, with the stubs as
boilerplate (the given code every submission shares), and writes

- OUTPUT-similarity.html: copydetect's report, side by side with the shared code highlighted;
- OUTPUT-similarity.csv: the pairs above the display threshold, most similar first;

and each student of a pair at or above the flag threshold gets the flag `similar-to: OTHER (NN%)`.
A flag is a reason to read two files, not a verdict: a short assignment done from the same handout
gives honest pairs too.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.paths import STUB_FILE
from grader.report import Flag, FlagKind
from instructor import csvsafe

STUBS = STUB_FILE
DISPLAY_THRESHOLD = 0.33
FLAG_THRESHOLD = 0.80


@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    first_share: float  # fraction of first's code found in second's
    second_share: float
    overlap_tokens: int

    @property
    def similarity(self) -> float:
        return max(self.first_share, self.second_share)


def compare(files: Mapping[str, str | Path], html: Path, boilerplate: Path = STUBS,
            display: float = DISPLAY_THRESHOLD) -> list[Pair]:
    """Pairs of {student: attention.py} above `display`, most similar first; writes the HTML report."""
    from copydetect import CopyDetector

    detector = CopyDetector(extensions=["py"], display_t=display, autoopen=False, silent=True,
                            out_file=str(html))
    owner: dict[str, str] = {}
    for student, path in sorted(files.items()):
        detector.add_file(str(path))
        owner[str(path)] = student
    detector.add_file(str(boilerplate), type="boilerplate")
    if len(owner) < 2:
        return []
    detector.run()
    detector.generate_html_report()
    pairs = [
        Pair(owner[first], owner[second], float(first_share), float(second_share), int(overlap))
        for first_share, second_share, first, second, _, _, overlap in detector.get_copied_code_list()
    ]
    return sorted(pairs, key=lambda pair: (-pair.similarity, pair.first, pair.second))


def write_pairs(pairs: Sequence[Pair], path: Path) -> None:
    """The pairs as CSV rows, shares to three decimals."""
    with open(path, "w", newline="") as handle:
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
