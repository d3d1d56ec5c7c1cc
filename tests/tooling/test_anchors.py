"""Mutant edits find their code in the reference with comments set aside (instructor.anchors), so the
reference's comments can be reworded without touching the catalogue."""

import re

from grader.paths import SOLUTION_FILE
from instructor import mutants
from instructor.anchors import definition_spans, replace_code, without_comments

REFERENCE = SOLUTION_FILE.read_text()


def reworded(source: str) -> str:
    """source with the text of every comment replaced (strings holding '#' are left alone)."""
    code = without_comments(source)
    kept = set(code.origin)
    out, i = [], 0
    while i < len(source):
        if i not in kept and source[i] == "#" and (i == 0 or source[i - 1] in " \t\n"):
            end = source.find("\n", i)
            end = len(source) if end < 0 else end
            out.append("# reworded")
            i = end
        else:
            out.append(source[i])
            i += 1
    return "".join(out)


def test_every_mutant_applies_to_a_reference_whose_comments_were_reworded():
    changed = reworded(REFERENCE)
    assert changed != REFERENCE and without_comments(changed).code == without_comments(REFERENCE).code
    for mutant in mutants.every_mutant():
        before = mutants.apply(mutant, REFERENCE)
        after = mutants.apply(mutant, changed)
        assert without_comments(after).code == without_comments(before).code, mutant.name


def test_a_hash_inside_a_string_is_code_not_a_comment():
    text = 'x = "a # b"  # a comment\ny = \'\'\'# c\n\'\'\'\n'
    assert without_comments(text).code == 'x = "a # b"\ny = \'\'\'# c\n\'\'\'\n'


def test_a_comment_after_the_replaced_code_stays_and_one_inside_it_goes():
    source = "a = 1  # one\nb = 2  # two\nc = 3\n"
    assert replace_code(source, "a = 1\nb = 2", "a = 10\nb = 20") == ("a = 10\nb = 20  # two\nc = 3\n", 1)


def test_code_in_two_functions_is_replaced_in_the_function_named_by_the_scope():
    source = "def f():\n    x = 1\n\n\ndef g():\n    x = 1\n"
    assert replace_code(source, "    x = 1\n", "    x = 2\n") == (source, 2)
    changed, count = replace_code(source, "    x = 1\n", "    x = 2\n", definition_spans(source, ["g"]))
    assert count == 1 and re.findall(r"x = \d", changed) == ["x = 1", "x = 2"]
