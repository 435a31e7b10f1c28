"""The option lines of a multiple-choice question: the project's one parser of them.

An option is marked by a letter A-F and a separator (``.`` ``:`` ``、`` ``)``; full-width
forms too) at a line start or after whitespace, so several options may share a line
(``B. 乙 C. 丙 D. 丁``). Its text runs to the next mark on its line or to the line end.
Validation (``doit.data.schema``: which letters an item offers), the format-free ranking and
the text formulation (``doit.data.kinds``: which option texts compete with the gold's, and
the question without them) all read it.
"""

from __future__ import annotations

import re
import unicodedata

OPTION_LETTERS = "ABCDEF"  # the letters a DoIT option can carry (ethics offers up to F)
_MARK = re.compile(r"(?:^|(?<=\s))([A-F])\s*[.:、)]", re.M)


def _folded(text: str) -> tuple[str, list[int]]:
    """``text`` with each character replaced by its NFKC form (``Ａ`` -> ``A``, ``．`` -> ``.``,
    ``）`` -> ``)``), and for each folded character the index of the one it came from."""
    chars, where = [], []
    for i, c in enumerate(text):
        folded = unicodedata.normalize("NFKC", c)
        chars.append(folded)
        where += [i] * len(folded)
    return "".join(chars), where


def _spans(question: str) -> list[tuple[str, int, int, int]]:
    """(letter, mark start, text start, text end) of every option marked in ``question``, as
    indices into ``question`` (not folded)."""
    folded, where = _folded(question)
    marks = list(_MARK.finditer(folded))
    out = []
    for m, after in zip(marks, marks[1:] + [None]):
        end = folded.find("\n", m.end())
        end = len(folded) if end < 0 else end
        if after is not None and after.start() < end:
            end = after.start()
        at = where[m.start(1)]
        start = where[m.end()] if m.end() < len(where) else len(question)
        stop = where[end] if end < len(where) else len(question)
        out.append((m.group(1), at, start, stop))
    return out


def option_marks(question: str) -> list[tuple[str, str]]:
    """(letter, text) of every option marked in ``question``, in order; texts are stripped,
    as written in the question (not folded), and may be empty."""
    return [(letter, question[start:stop].strip()) for letter, _, start, stop in _spans(question)]


def without_options(question: str) -> str:
    """``question`` with every option (its mark and its text) taken out, and the lines that
    held only options dropped: ``题目\nA. 甲\nB. 乙 C. 丙`` -> ``题目``. The text formulation
    of multiple choice (``doit.data.kinds.formulate``) asks this."""
    spans = _spans(question)
    if not spans:
        return question.strip()
    kept, last = [], 0
    for _, at, _, stop in spans:
        kept.append(question[last:at])
        last = stop
    kept.append(question[last:])
    lines = "".join(kept).split("\n")
    return "\n".join(line.rstrip() for line in lines if line.strip()).strip()


def option_letters(question: str) -> list[str]:
    """Every option letter marked in ``question``, sorted and distinct."""
    return sorted({letter for letter, _ in option_marks(question)})


def option_texts(question: str) -> dict[str, str]:
    """{letter: text} of the options with a text, in order of appearance (a letter marked
    twice keeps its first position and its last text)."""
    return {letter: text for letter, text in option_marks(question) if text}
