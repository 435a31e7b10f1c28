"""Records in, items out: validation of one DoIT record and the fields derived from it.

A *record* is one line of a DoIT file (``messages``, ``idx``, ``type``,
``question_format``, ``choices``, ``answer``). An *item* is a validated record
plus the fields every later stage uses and never re-derives:

========== ============================================================================
field      meaning
========== ============================================================================
uid        16 hex chars of sha256(ability, messages), a hash of the content: with idx
           the item's identity in sampling; a synthetic record's identity alone
           (sampling, output order, dedup), so its subsets ignore line order
ability    canonical ability key (``role-play`` -> ``role_play``); ``synthetic`` for
           messages-only general instructions
type       the record's ``type`` with hyphens normalised (C-Eval keeps ``_fshot``)
idx        int, unique within an ability (synthetic records: their 0-based line
           position, which identifies nothing: see uid)
question_format  0 exact match, 1 open-ended (perplexity ranking); -1 synthetic
messages   list of {role, content}, alternating user/assistant, ending with assistant
choices    format 1: [gold, fine distractor, coarse distractor]; else []
answer     math: the gold final answer; else None
answer_kind  one of the kinds registered in ``doit.data.kinds.KINDS`` (mc, tf, cloze,
           multiselect, math, open); None for synthetic
options    mc/multiselect: the question's option letters, e.g. ["A","B","C"], marked
           "A. ..." at a line start or after a space (``doit.data.options``);
           none marked: A-D and a warning; a partial set is an error. Else []
gold       mc: letter; tf: "T"/"F"; cloze: the whole answer, stripped; multiselect:
           sorted letters ("AC"); math: answer; open: choices[0]. None for synthetic
chance     per-item chance of a random guess, the kind's rule: mc 1/m, tf 1/2,
           multiselect 1/C(m,k), cloze and math 0, open 1/3; None for synthetic
source     file the record came from, line its 1-based line (row for HF datasets)
cluster    the record's optional ``cluster`` (a string): held-out items that share it
           rest on one fact (the micro corpus writes the fact; real DoIT has none), so
           the paired bootstrap resamples them together; else None
========== ============================================================================
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from doit.data import abilities as ab
from doit.data import kinds as ak
from doit.data.kinds import FALSE_LABELS, TRUE_LABELS
from doit.data.options import OPTION_LETTERS, option_letters

ERROR, WARNING = "error", "warning"
ROLES = ("user", "assistant")
_CHINESE_SPAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LETTER_SET_SEPARATORS = re.compile(r"[\s,，、;；和及与]+")
DEFAULT_OPTIONS = ("A", "B", "C", "D")
QUESTION = "messages[-2].content"


@dataclass(frozen=True)
class Problem:
    """One finding about one record: ``path:line: field: message``."""

    path: str
    line: int
    field: str
    message: str
    level: str = ERROR

    def __str__(self) -> str:
        tag = "" if self.level == ERROR else "warning: "
        return f"{self.path}:{self.line}: {self.field}: {tag}{self.message}"


class DataError(ValueError):
    """Raised with every error found (not just the first)."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        shown = "\n".join(str(p) for p in problems[:50])
        more = f"\n... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{len(problems)} problem(s) in the data:\n{shown}{more}")


def first_chinese_span(text: str) -> str | None:
    """The first run of CJK ideographs in ``text`` (the cloze answer rule)."""
    m = _CHINESE_SPAN.search(text)
    return m.group(0) if m else None


def single_letter(text: str, allowed: tuple[str, ...] | list[str] = DEFAULT_OPTIONS) -> str | None:
    """``text`` as one option letter (full-width letters accepted), or None."""
    t = unicodedata.normalize("NFKC", text).strip()
    return t if len(t) == 1 and t in allowed else None


def tf_label(text: str) -> str | None:
    """ "T"/"F" when ``text`` is exactly one of the true/false labels, else None."""
    t = text.strip()
    if t in TRUE_LABELS:
        return "T"
    if t in FALSE_LABELS:
        return "F"
    return None


def letter_set(line: str) -> str | None:
    """Sorted distinct letters A-F when ``line`` is only letters and separators ("A、C")."""
    t = unicodedata.normalize("NFKC", line).strip().upper()
    t = _LETTER_SET_SEPARATORS.sub("", t)
    if not t or any(c not in OPTION_LETTERS for c in t):
        return None
    return "".join(sorted(set(t)))


def options_problem(found: list[str]) -> str | None:
    """Why the marked letters ``found`` are not a whole option set A, B, ... (None if they are)."""
    shown = ", ".join(found)
    if len(found) < 2:
        return f"only one option letter ({shown}) found"
    if found[0] != "A":
        return f"option letters {shown} do not start at A"
    if found != list(OPTION_LETTERS[: len(found)]):
        return f"option letters {shown} are not contiguous"
    return None


def question_options(question: str) -> list[str]:
    """The option letters of ``question`` when they are a whole set A, B, C...; else []."""
    found = option_letters(question)
    return [] if options_problem(found) else found


def item_uid(ability: str, messages: list[dict[str, str]]) -> str:
    payload = json.dumps(
        [ability, [[m["role"], m["content"]] for m in messages]], ensure_ascii=False
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


class _Checker:
    """Collects problems for one record."""

    def __init__(self, path: str, line: int):
        self.path, self.line, self.problems = path, line, []

    def error(self, field: str, message: str) -> None:
        self.problems.append(Problem(self.path, self.line, field, message, ERROR))

    def warn(self, field: str, message: str) -> None:
        self.problems.append(Problem(self.path, self.line, field, message, WARNING))

    @property
    def failed(self) -> bool:
        return any(p.level == ERROR for p in self.problems)


def check_messages(record: dict[str, Any], c: _Checker) -> list[dict[str, str]] | None:
    msgs = record.get("messages")
    if msgs is None:
        c.error("messages", "missing")
        return None
    if not isinstance(msgs, list) or not msgs:
        c.error("messages", "must be a non-empty list of {role, content}")
        return None
    out = []
    for i, m in enumerate(msgs):
        field = f"messages[{i}]"
        if not isinstance(m, dict):
            c.error(field, f"must be an object with role and content, got {type(m).__name__}")
            return None
        role, content = m.get("role"), m.get("content")
        want = ROLES[i % 2]
        if role != want:
            c.error(
                f"{field}.role", f"expected {want!r} (turns alternate user/assistant), got {role!r}"
            )
        if not isinstance(content, str) or not content.strip():
            c.error(f"{field}.content", "missing or empty")
        out.append({"role": role, "content": content if isinstance(content, str) else ""})
    if msgs and out[-1]["role"] != "assistant":
        c.error("messages", "the last turn must be the assistant's")
    return None if c.failed else out


def check_ability(record: dict[str, Any], hint: str | None, c: _Checker) -> str | None:
    rtype = record.get("type")
    if rtype is None:
        if hint is None:
            c.error("type", "missing, and the file name names no ability")
        return hint
    if not isinstance(rtype, str):
        c.error("type", f"must be a string, got {type(rtype).__name__}")
        return None
    key = canonical = ab.canonical_key(rtype)
    if canonical is None and rtype.strip().lower() == ab.SYNTHETIC:
        key = ab.SYNTHETIC
    if key is None:
        c.error("type", f"unknown ability {rtype!r}; known: {', '.join(a.key for a in ab.ALL)}")
        return None
    if hint is not None and key != hint:
        c.error("type", f"{rtype!r} does not match the file's ability {hint!r}")
    return key


def check_idx(record: dict[str, Any], c: _Checker, default: int) -> int | None:
    idx = record.get("idx")
    if idx is None:
        return default
    if isinstance(idx, bool) or not (
        isinstance(idx, int) or (isinstance(idx, str) and idx.strip().isdecimal())
    ):
        c.error("idx", f"must be an integer, got {idx!r}")
        return None
    return int(idx)


def _options(question: str, gold: str, c: _Checker, widen: bool = False) -> list[str] | None:
    """The option letters of ``question``, which must hold every letter of ``gold``.

    No marked letters: A-D with a warning (``widen`` stretches them to the highest gold
    letter, for multi-select). Marked letters that are not a whole set A, B, ..., or
    that miss the gold, are an error (None), never a shorter option set."""
    found = option_letters(question)
    if not found:
        c.warn(QUESTION, "no option letters (A. ...) found in the question: assuming A-D")
        top = max([*gold, DEFAULT_OPTIONS[-1]]) if widen else DEFAULT_OPTIONS[-1]
        found, why = list(OPTION_LETTERS[: OPTION_LETTERS.index(top) + 1]), None
    else:
        why = options_problem(found)
    missing = [x for x in gold if x not in found]
    if why is None and missing:
        why = f"gold {gold!r} is not among the options {', '.join(found)}"
    if why is not None:
        c.error(QUESTION, f"{why} (options are marked 'A. ...' at a line start or after a space)")
        return None
    return found


def _is_letter_answer(answer: str, question: str, kinds: tuple[str, ...]) -> bool:
    """True when ``answer`` is an option letter; for history, "F" is the false label unless
    the question offers an option F."""
    letter = single_letter(answer, OPTION_LETTERS)
    if letter is None:
        return False
    return not (ak.TF in kinds and tf_label(answer)) or letter in option_letters(question)


Derived = tuple[str, list[str], str]  # (answer_kind, options, gold)


def _mc(answer: str, question: str, c: _Checker) -> Derived | None:
    letter = single_letter(answer, OPTION_LETTERS)
    options = _options(question, letter, c)
    return None if options is None else (ak.MC, options, letter)


def _multiselect(answer: str, question: str, c: _Checker) -> Derived | None:
    lines = [ln for ln in answer.splitlines() if ln.strip()]
    gold = letter_set(lines[-1]) if lines else None
    if gold is None:
        c.error(
            "messages[-1].content",
            f"multi-select gold: the last line must be a set of letters A-F, got {lines[-1] if lines else ''!r}",
        )
        return None
    options = _options(question, gold, c, widen=True)
    if options is None:
        return None
    return ak.MULTISELECT, options, gold


def _open(record: dict[str, Any], answer: str, c: _Checker) -> Derived | None:
    choices = record.get("choices")
    if not isinstance(choices, list) or len(choices) != 3:
        n = len(choices) if isinstance(choices, list) else "no"
        c.error("choices", f"open-ended (question_format 1) items need exactly 3 choices, got {n}")
        return None
    if not all(isinstance(x, str) and x.strip() for x in choices):
        c.error("choices", "every choice must be a non-empty string")
        return None
    if len(set(choices)) < 3:
        c.warn("choices", "choices repeat: a distractor equals another choice")
    if choices[0].strip() != answer.strip():
        c.warn("choices", "choices[0] (the gold answer) differs from the last assistant message")
    return ak.OPEN, [], choices[0]


def derive_answer(
    ability: str, record: dict[str, Any], messages: list[dict[str, str]], c: _Checker
) -> Derived | None:
    """(answer_kind, options, gold) for a validated record, or None (with an error)."""
    kinds = ab.get(ability).answer_kinds
    answer = messages[-1]["content"]
    question = messages[-2]["content"] if len(messages) >= 2 else ""
    if ak.OPEN in kinds:
        return _open(record, answer, c)
    if ak.MATH in kinds:
        gold = record.get("answer")
        if isinstance(gold, (int, float)) and not isinstance(gold, bool):
            gold = str(gold)
        if not isinstance(gold, str) or not gold.strip():
            c.error("answer", "math items need a non-empty `answer` (the gold final answer)")
            return None
        return ak.MATH, [], gold.strip()
    if ak.MULTISELECT in kinds:
        return _multiselect(answer, question, c)
    if ak.MC in kinds and _is_letter_answer(answer, question, kinds):
        return _mc(answer, question, c)
    derived = None
    if ak.TF in kinds and tf_label(answer):
        derived = ak.TF, [], tf_label(answer)
    if derived is None and ak.CLOZE in kinds and first_chinese_span(answer):
        derived = ak.CLOZE, [], answer.strip()  # whole: "学而时习之，不亦说乎"
    if derived is None:
        wants = " or ".join(ak.kind(k).gold for k in kinds)
        c.error(
            "messages[-1].content",
            f"gold not derivable for {ability}: expected {wants}, got {answer.strip()[:40]!r}",
        )
    return derived


def check_format(ability: str, record: dict[str, Any], c: _Checker) -> int | None:
    qf = record.get("question_format")
    if qf is None:
        c.error("question_format", "missing (0 = exact match, 1 = open-ended)")
        return None
    if isinstance(qf, bool) or qf not in (0, 1):
        c.error("question_format", f"must be 0 or 1, got {qf!r}")
        return None
    is_open = ak.OPEN in ab.get(ability).answer_kinds
    if bool(qf) != is_open:
        want = 1 if is_open else 0
        c.error(
            "question_format",
            f"{ability} items are {'open-ended' if is_open else 'exact match'}: expected {want}, got {qf}",
        )
        return None
    return qf


def parse_record(record: Any, *, path: str, line: int, hint: str | None = None, position: int = 0):
    """Validate one record. Returns (item or None, problems)."""
    c = _Checker(path, line)
    if not isinstance(record, dict):
        c.error("record", f"must be a JSON object, got {type(record).__name__}")
        return None, c.problems
    messages = check_messages(record, c)
    ability = check_ability(record, hint, c)
    synthetic = ability == ab.SYNTHETIC
    if not synthetic and ability is not None and "idx" not in record:
        c.error("idx", "missing")
    idx = check_idx(record, c, default=position)
    if "cluster" in record and not (isinstance(record["cluster"], str) and record["cluster"]):
        c.error("cluster", f"optional; a non-empty string when given, got {record['cluster']!r}")
    if messages is None or ability is None or c.failed:
        return None, c.problems
    if synthetic:
        item = _item(ability, record, messages, idx, -1, (None, [], None), path, line)
        return item, c.problems
    qf = check_format(ability, record, c)
    derived = derive_answer(ability, record, messages, c) if qf is not None else None
    if derived is None or c.failed:
        return None, c.problems
    return _item(ability, record, messages, idx, qf, derived, path, line), c.problems


def _item(ability, record, messages, idx, qf, derived, path, line) -> dict[str, Any]:
    kind, options, gold = derived
    rtype = record.get("type") or (
        ability if ability == ab.SYNTHETIC else ab.get(ability).type_name
    )
    answer = record.get("answer")
    cluster = record.get("cluster")
    item = {
        "uid": item_uid(ability, messages),
        "ability": ability,
        "type": ab.item_type(rtype),
        "idx": idx,
        "question_format": qf,
        "messages": messages,
        "choices": list(record.get("choices") or []) if qf == 1 else [],
        "answer": None if answer is None else str(answer),
        "answer_kind": kind,
        "options": list(options),
        "gold": gold,
        "chance": None,
        "source": path,
        "line": line,
        "cluster": None if cluster is None else str(cluster),
    }
    if kind is not None:  # synthetic records have none
        item["chance"] = ak.kind(kind).chance(item)
    return item


def to_record(item: dict[str, Any]) -> dict[str, Any]:
    """The DoIT record an item was parsed from (type normalised), for writing back out."""
    if item["ability"] == ab.SYNTHETIC:
        return {"messages": item["messages"]}
    rec = {
        "messages": item["messages"],
        "idx": item["idx"],
        "type": item["type"],
        "question_format": item["question_format"],
    }
    if item["question_format"] == 1:
        rec["choices"] = item["choices"]
    if item["answer"] is not None:
        rec["answer"] = item["answer"]
    if item.get("cluster") is not None:
        rec["cluster"] = item["cluster"]
    return rec
