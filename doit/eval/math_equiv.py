"""Math answer equivalence: the study's MATH-style rule and Hugging Face's math-verify.

``paper``: both answers are normalised the way the MATH benchmark's scorer does
(drop ``\\left``/``\\right``, ``\\!``, spaces, ``^\\circ``, ``\\%``, ``\\$``,
``\\text{units}``; ``\\dfrac``/``\\tfrac`` -> ``\\frac``; ``\\frac12`` ->
``\\frac{1}{2}``; ``a/b`` -> ``\\frac{a}{b}``; ``0.5`` -> ``\\frac{1}{2}``; ``\\sqrt2``
-> ``\\sqrt{2}``; a short ``x =`` prefix dropped; a leading ``.`` gets its 0), then
compared as strings. doit also drops trailing unit words after a number (``5 cm``,
``5厘米``) and thousands separators (``1,000``).
``verify``: ``math_verify.verify(parse(gold), parse(prediction))``.
"""

from __future__ import annotations

import re

_UNIT_AFTER_NUMBER = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(?:[A-Za-z]+|[\u4e00-\u9fff]+)\.?$")


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
    m = re.fullmatch(r"(-?\d+)/(\d+)", s)
    return f"\\frac{{{m.group(1)}}}{{{m.group(2)}}}" if m else s


def _fix_sqrt(s: str) -> str:
    return re.sub(r"\\sqrt(\w)", r"\\sqrt{\1}", s)


def _strip_units(s: str) -> str:
    s = re.sub(r"\\text\{\s*[^}]*\}$", "", s) if re.search(r"\d\s*\\text\{", s) else s
    m = _UNIT_AFTER_NUMBER.match(s.strip())
    return m.group(1) if m else s


def normalize_paper(answer: str) -> str:
    s = answer.strip().replace("\n", "").rstrip(".").replace("\\!", "")
    s = s.replace("\\\\", "\\").replace("dfrac", "frac").replace("tfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "").replace("°", "")
    s = s.replace("\\$", "").replace("$", "").replace("\\%", "").replace("%", "")
    s = _strip_units(s)
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if s.startswith("."):
        s = "0" + s
    if len(s.split("=")) == 2 and len(s.split("=")[0].strip()) <= 2:
        s = s.split("=")[1]
    s = _fix_sqrt(s).replace(" ", "")
    s = _fix_fracs(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    return _fix_slash(s)


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
