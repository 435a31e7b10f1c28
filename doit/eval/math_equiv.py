"""Math answer equivalence: the study's MATH-style rule and Hugging Face's math-verify.

``paper``: both answers are normalised the way the MATH benchmark's scorer (and the
study's copy of it) does (drop ``\\left``/``\\right``, ``\\!``, spaces, ``^\\circ``,
``\\%``, ``\\$``; ``\\dfrac``/``\\tfrac`` -> ``\\frac``; ``\\frac12`` -> ``\\frac{1}{2}``;
``a/b`` and ``-a/b`` -> ``\\frac{a}{b}``, ``-\\frac{a}{b}``; ``\\frac{-a}{b}`` ->
``-\\frac{a}{b}``; ``0.5`` -> ``\\frac{1}{2}``; ``\\sqrt2`` -> ``\\sqrt{2}``; a short
``x =`` prefix dropped; a leading ``.`` gets its 0), then compared; an answer with
commas outside brackets is compared as the set of its normalised values
(``3,-2`` == ``-2,3``; a tuple ``(1,2)`` stays ordered). doit's departures from the
study (units, thousands separators, sets of any values) are in doit/eval/README.md.
``verify``: ``math_verify.verify(parse(gold), parse(prediction))``.
"""

from __future__ import annotations

import re

# Units stripped after a number: a closed list, so that 5x, 3i or 5n keep their letter.
_UNIT_WORDS = (
    "square units|sq units|cubic units|units|unit|square feet|square inches|square meters"
    "|cm|mm|km|meters|meter|metres|metre|inches|inch|feet|foot|ft|yards|yard|miles|mile"
    "|kg|grams|gram|pounds|pound|lbs|lb|ounces|ounce|oz|liters|liter|litres|litre|ml"
    "|dollars|dollar|cents|cent|degrees|degree|seconds|second|sec|minutes|minute|min"
    "|hours|hour|hrs|hr|days|day|weeks|week|months|month|years|year|mph|people|ways"
)
_UNIT_CJK = (
    "平方单位|立方单位|单位|平方厘米|平方毫米|平方千米|平方公里|平方米|平方英寸|平方英尺"
    "|立方厘米|立方米|立方英寸|立方英尺|厘米|毫米|千米|公里|米|英寸|英尺|码|英里|千克|公斤"
    "|克|磅|盎司|毫升|升|美元|美分|元|角|度|秒钟|秒|分钟|分|小时|天|星期|周|个月|年|岁"
    "|个|种|次|人|名|只|条|块|张|本|页|辆|组|步|场|颗|根|箱|盒|位|点"
)
_POWER = r"(?:\^\{?[23]\}?)?"
_UNIT = re.compile(
    rf"(?<=[\d}}])\s*(?:\\(?:text|mbox|mathrm)\{{\s*(?:{_UNIT_WORDS}|{_UNIT_CJK})\s*\}}"
    rf"|(?:{_UNIT_WORDS})(?![A-Za-z])|(?:{_UNIT_CJK})){_POWER}\.?$"
)
_THOUSANDS = re.compile(r"-?\d{1,3}(?:,\d{3})+")
_NEG_FRAC = re.compile(r"\\frac\{-([^{}]+)\}\{([^{}]+)\}")
_OPENS, _CLOSES = "([{", ")]}"


def _fix_fracs(s: str) -> str:
    parts = s.split("\\frac")
    out = parts[0]
    for part in parts[1:]:
        out += "\\frac"
        if part.startswith("{") or len(part) < 2:
            out += part
            continue
        a, b, rest = part[0], part[1], part[2:]
        if b == "{":
            out += "{" + a + "}" + b + rest
        else:
            out += "{" + a + "}{" + b + "}" + rest
    return out


def _fix_slash(s: str) -> str:
    """``a/b`` -> ``\\frac{a}{b}`` and ``-a/b`` -> ``-\\frac{a}{b}`` for integers a, b."""
    m = re.fullmatch(r"(-?)(\d+)/(\d+)", s)
    return f"{m.group(1)}\\frac{{{m.group(2)}}}{{{m.group(3)}}}" if m else s


def _fix_sqrt(s: str) -> str:
    return re.sub(r"\\sqrt(\w)", r"\\sqrt{\1}", s)


def _strip_units(s: str) -> str:
    return _UNIT.sub("", s.strip())


def _clean(answer: str) -> str:
    """Text-level replacements that hold for a whole answer and each of its values."""
    s = answer.strip().replace("\n", "").rstrip(".").replace("\\!", "")
    s = s.replace("\\\\", "\\").replace("dfrac", "frac").replace("tfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "").replace("，", ",")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "").replace("°", "")
    return s.replace("\\$", "").replace("$", "").replace("\\%", "").replace("%", "")


def _normalize_value(answer: str) -> str:
    """One value, normalised (a whole answer when it is not a set)."""
    s = _strip_units(answer)
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if s.startswith("."):
        s = "0" + s
    if len(s.split("=")) == 2 and len(s.split("=")[0].strip()) <= 2:
        s = s.split("=")[1]
    s = _fix_sqrt(s).replace(" ", "")
    s = _fix_fracs(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    s = _fix_slash(s)
    s = _NEG_FRAC.sub(r"-\\frac{\1}{\2}", s)
    m = re.fullmatch(r"\\text\{\(([A-F])\)\}.*", s)  # the study's "\text{(C)}" -> "C"
    return m.group(1) if m else s


def _top_level_parts(s: str) -> list[str]:
    """``s`` split at the commas outside any bracket."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        if ch in _OPENS:
            depth += 1
        elif ch in _CLOSES:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(s[start:i])
            start = i + 1
    return [*parts, s[start:]]


def normalize_paper(answer: str) -> str | frozenset[str]:
    """The comparable form of ``answer``: a string, or a set of strings for a list answer."""
    s = _clean(answer)
    whole = _normalize_value(s)
    if _THOUSANDS.fullmatch(whole):
        return whole.replace(",", "")
    parts = _top_level_parts(s)
    if len(parts) > 1:
        return frozenset(_normalize_value(p) for p in parts)
    return whole


def equal_paper(prediction: str | None, gold: str) -> bool:
    if prediction is None:
        return False
    try:
        return normalize_paper(prediction) == normalize_paper(gold)
    except Exception:  # a malformed answer is simply not equal
        return prediction.strip() == gold.strip()


def equal_verify(prediction: str | None, gold: str) -> bool:
    """math-verify's judgement (the `eval` extra); boxed answers are wrapped in $...$."""
    if prediction is None:
        return False
    from math_verify import parse, verify

    wrap = lambda s: s if "$" in s or "\\boxed" in s else f"${s}$"  # noqa: E731
    try:
        return bool(verify(parse(wrap(gold)), parse(wrap(prediction))))
    except Exception:
        return False
