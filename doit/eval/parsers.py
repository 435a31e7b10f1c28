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

from doit.data.kinds import FALSE_LABELS, TRUE_LABELS

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


def cloze_text(text: str) -> str:
    """NFKC, surrounding whitespace and trailing punctuation stripped: how a cloze gold and a
    cloze prediction are both put before they are compared for equality."""
    t = unicodedata.normalize("NFKC", text).strip()
    while t and unicodedata.category(t[-1]).startswith("P"):
        t = t[:-1].rstrip()
    return t


def cloze_answer(prediction: str) -> str | None:
    """The first non-empty line of the output, as ``cloze_text``; None for an empty output."""
    line = next((ln for ln in prediction.splitlines() if ln.strip()), None)
    return None if line is None else cloze_text(line)


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


_ANSWER_MARK = "答案"
_LEADING_LINK = re.compile(r"^(?:是|为|：|:|\s)+")
_DOLLAR_SPAN = re.compile(r"\$(.*)\$")  # greedy, per line: first to last $ of a line
_SLASH = re.compile(r"-?[A-Za-z0-9]+/[A-Za-z0-9]+")
_NUMBER_LIST = re.compile(r"-?\d+(?:\.\d+)?(?:,-?\d+(?:\.\d+)?)*")
_SQRT = re.compile(r"sqrt\([^)]*\)")
_BRACKETED = re.compile(r"\[.*?\]|\(.*?\)")
_LAST_NUMBER = re.compile(r"\$?-?(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![A-Za-z0-9])")


def _right_of_equals(s: str) -> str:
    return s.split("=")[-1].lstrip(" ")


def _dollar_span(text: str) -> str | None:
    spans = _DOLLAR_SPAN.findall(text)
    return _right_of_equals(spans[-1]) if spans else None


def _special_case(text: str) -> str | None:
    """The study's special cases, tried on the whole (cut) output: a plain ``a/b``, a list
    of numbers, the last ``sqrt(...)``, the last bracketed ``(...)`` or ``[...]``."""
    s = text.strip()
    if _SLASH.fullmatch(s):
        return s
    s = s.replace("，", ",")
    if _NUMBER_LIST.fullmatch(s):
        return s
    s = s.replace(" ", "")
    for pattern in (_SQRT, _BRACKETED):
        found = pattern.findall(s)
        if found:
            return found[-1]
    return None


def _equals_or_number(text: str) -> str | None:
    if "=" in text:
        return _right_of_equals(text).split("\n")[0].strip().rstrip(".。")
    numbers = _LAST_NUMBER.findall(text)
    return numbers[-1].lstrip("$") if numbers else None


def math_answer(prediction: str) -> str | None:
    """The study's final-answer rule (``parse_math_tasks``), in its order.

    The text after the last 答案 (if any), then: the last \\boxed{}/\\fbox{} (right-hand side
    of its last =); else the greedy $...$ span of the last line holding one (right-hand side
    of its last =); else a special case (``_special_case``); else the right-hand side of the
    last = up to its line end; else the last number. On every path 或 becomes ", " and $
    signs (``\\$`` too) go. doit's departures are listed in doit/eval/README.md.
    """
    text = prediction
    if _ANSWER_MARK in text:
        text = _LEADING_LINK.sub("", text.split(_ANSWER_MARK)[-1].strip())
    boxed = last_boxed(text)
    if boxed is not None:
        answer = _right_of_equals(boxed)
    else:
        answer = _dollar_span(text) or _special_case(text) or _equals_or_number(text)
    if answer is None:
        return None
    answer = re.sub(r"\s*或\s*", ", ", answer)
    return re.sub(r"\\?\$", "", answer).strip() or None
