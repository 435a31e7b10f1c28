"""Answer extraction from model outputs: one small pure function per answer kind.

Deviations from the reference scorer, on purpose:
* multiple choice: an output that is not exactly one option letter (after stripping
  whitespace, full-width letters folded) goes to the first-step logit fallback; the
  reference marked a one-character non-letter output wrong.
* true/false and multi-select: Latin keywords (T, F, V, X, option letters) count only
  when they stand alone, not inside a word ("The", "Answer"); Chinese keywords count
  anywhere, as in the study.
"""

from __future__ import annotations

import re
import unicodedata

from doit.data.schema import FALSE_LABELS, TRUE_LABELS, first_chinese_span

_LATIN = "A-Za-z"
_STANDALONE_LETTERS = re.compile(rf"(?<![{_LATIN}])([A-F]+)(?![{_LATIN}])")


def fold(text: str) -> str:
    """Full-width ASCII to half-width (Ａ -> A, ０ -> 0), other characters kept."""
    return "".join(
        chr(ord(c) - 0xFEE0) if 0xFF01 <= ord(c) <= 0xFF5E else (" " if c == "\u3000" else c)
        for c in text
    )


def mc_letter(prediction: str, options: list[str]) -> str | None:
    """The option letter when the whole output is one of ``options``, else None."""
    t = fold(prediction).strip()
    return t if len(t) == 1 and t in options else None


def logit_choice(letter_logits: dict[str, float] | None, options: list[str]) -> str | None:
    """Highest first-step logit among the item's own option letters (first wins ties)."""
    if not letter_logits:
        return None
    scored = [(letter_logits[o], -i, o) for i, o in enumerate(options) if o in letter_logits]
    return max(scored)[2] if scored else None


def _has_keyword(text: str, keyword: str) -> bool:
    if keyword.isascii() and keyword.isalpha():
        return re.search(rf"(?<![{_LATIN}]){keyword}(?![{_LATIN}])", text) is not None
    return keyword in text


def tf_answer(prediction: str) -> str | None:
    """ "T" or "F" when exactly one polarity of keyword appears; None for both or neither."""
    t = fold(prediction)
    false = any(_has_keyword(t, k) for k in FALSE_LABELS)
    true = any(_has_keyword(t, k) for k in TRUE_LABELS)  # the study's rule: 不对 contains 对
    if true == false:
        return None
    return "T" if true else "F"


def cloze_answer(prediction: str) -> str | None:
    return first_chinese_span(prediction)


def multiselect_answer(prediction: str) -> str | None:
    """Sorted distinct letters A-F standing alone on the last non-empty line ("A、C" -> "AC")."""
    lines = [ln for ln in fold(prediction).splitlines() if ln.strip()]
    if not lines:
        return None
    letters = "".join(_STANDALONE_LETTERS.findall(lines[-1]))
    return "".join(sorted(set(letters))) or None


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...} or \\fbox{...}, nested braces handled."""
    starts = [m.end() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    if not starts:
        return None
    i, depth = starts[-1], 1
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i:j].strip()
    return None


_DOLLARS = re.compile(r"\$([^$]+)\$")
_AFTER_ANSWER = re.compile(r"答案\s*(?:是|为|：|:)?\s*(.+)")
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*(?:/\d+)?")


def math_answer(prediction: str) -> str | None:
    """Final answer: last \\boxed{}/\\fbox{}, else last $...$, else text after 答案, else last number."""
    boxed = last_boxed(prediction)
    if boxed is not None:
        return boxed
    dollars = _DOLLARS.findall(prediction)
    if dollars:
        return dollars[-1].strip()
    after = _AFTER_ANSWER.findall(prediction)
    if after:
        return after[-1].strip().rstrip("。.")
    numbers = _NUMBER.findall(prediction)
    return numbers[-1] if numbers else None


def normalize_unicode(text: str) -> str:
    return unicodedata.normalize("NFKC", text)
