"""The one registry of answer kinds and formulations.

An *answer kind* says how an item's gold answer is stored, answered and compared; every
stage refers to one through its record (``KINDS``, ``kind``) rather than restating what it
does: evaluation adds only how a kind's answer is extracted and judged (``doit.eval.kinds``).
It lives in the data layer because the schema and the option parser use it too.

A *formulation* is how a stored item is asked and answered (``FORMULATIONS``). ``letter`` is
the study's: the items as stored (options listed, an option letter the answer). ``text`` asks
a multiple-choice item without its option lines and answers it with the gold option's text,
scored by ranking every option's text (the cloze formulation of OLMES, Gu et al. 2024: small
models rank answer texts long before they can bind an answer to its letter); true/false items
rank their two label texts, multi-select items the option-text sets of the gold's size.
``formulate(item, formulation)`` rewrites an item at render time (training targets,
prediction, scoring); the files, their schema and ``ground_truth.json`` never change.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from math import comb

from doit.data.options import option_texts, without_options

# --- answer kinds: how an item's gold answer is stored, answered and compared -----------------
MC = "mc"  # one option letter (A-D, or A-C for 3-option items)
TF = "tf"  # a true/false label, stored as gold "T" or "F"
CLOZE = "cloze"  # a span of Chinese text
MULTISELECT = "multiselect"  # a set of option letters, stored sorted ("AC")
MATH = "math"  # a final answer (the record's `answer` field)
OPEN = "open"  # open-ended: choices[0] is gold, two distractors follow
# The text formulation's kinds: ranked texts in `choices`, gold first (`formulate` writes them)
MC_TEXT = "mc_text"  # the gold option's text, ranked against every other option's text
TF_TEXT = "tf_text"  # the gold label's text (正确, 对, ...), ranked against its counterpart's
MULTISELECT_TEXT = "multiselect_text"  # the gold set's texts (joined by ；) against every other
# set of the gold's size
LETTER, TEXT = "letter", "text"
FORMULATIONS = (LETTER, TEXT)  # letter: the items as stored (the study's); text: see above
SET_JOIN = "；"  # joins the option texts of a set, in option order
STUDY_MAX_NEW_TOKENS = 1024  # the study's greedy decoding cap: every generated kind's default
TRUE_LABELS = ("正确", "对", "T", "√", "V")  # a true/false gold or output that says "true"
FALSE_LABELS = ("错误", "错", "F", "×", "X")  # ... that says "false"

Item = Mapping  # an item as doit.data.schema derives it (options, gold, choices, messages, ...)
Alternatives = tuple[str, list[str]] | None  # (gold text, alternative texts) or nothing to rank
Rewrite = Callable[[Item], tuple[list[dict], list[str]]]  # item -> (messages, texts gold first)


@dataclass(frozen=True)
class AnswerKind:
    """What an answer kind is, for every stage that handles one: validation (chance, how the
    gold is described), prediction (generated within a budget, or texts ranked), and the
    format-free ranking of the Complexity feature. Evaluation attaches how an answer is
    extracted and judged, by ``name`` (``doit.eval.kinds``)."""

    name: str
    gold: str  # what the gold is, in words (validation errors quote it)
    generated: bool  # True: answered by greedy generation, then parsed; False: texts ranked
    default_budget: int | None  # generated kinds: max_new_tokens unless overridden; else None
    chance: Callable[[Item], float]  # an item's chance of a random guess, from its fields
    ranked: Callable[[Item], list[str]] | None  # ranked kinds: the texts to rank, gold first
    # The format-free ranking (Complexity): (gold text, alternatives) for an item, given the
    # items of its ability, or None when it has nothing to rank against.
    alternatives: Callable[[Item, Sequence[Item]], Alternatives]
    # formulation -> the kind an item of this kind becomes in it; absent: it stays this kind
    formulated: tuple[tuple[str, str], ...] = ()
    # a kind that a formulation makes: how an item of the source kind is rewritten into it
    rewrite: Rewrite | None = None

    def in_formulation(self, formulation: str) -> str:
        """The name of the kind this kind's items have in ``formulation``."""
        return dict(self.formulated).get(formulation, self.name)

    def __post_init__(self):
        if self.generated and (self.default_budget is None or self.ranked is not None):
            raise ValueError(
                f"answer kind {self.name}: generated: a default_budget, no ranked texts"
            )
        if not self.generated and (self.default_budget is not None or self.ranked is None):
            raise ValueError(f"answer kind {self.name}: ranked: ranked texts, no default_budget")


def _one_option(item: Item) -> float:
    return 1 / len(item["options"])


def _option_set(item: Item) -> float:  # the gold's size of letters, drawn from the options
    return 1 / comb(len(item["options"]), len(item["gold"]))


def _one_choice(item: Item) -> float:
    return 1 / len(item["choices"])


def _half(item: Item) -> float:
    return 0.5


def _none(item: Item) -> float:
    return 0.0


def _choices(item: Item) -> list[str]:
    return list(item["choices"])


def _choice_alternatives(item: Item, same_ability: Sequence[Item]) -> Alternatives:
    """The gold choice against the item's two distractors."""
    return item["choices"][0], list(item["choices"][1:3])


def _option_alternatives(item: Item, same_ability: Sequence[Item]) -> Alternatives:
    """The gold option texts (joined by ``；`` for a set) against the other options' texts."""
    options = option_texts(item["messages"][-2]["content"])
    gold = [options[x] for x in item["gold"] if x in options]
    alts = [t for x, t in options.items() if x not in item["gold"]]
    return ("；".join(gold), alts) if gold and alts else None


def _other_label(item: Item, same_ability: Sequence[Item]) -> Alternatives:
    """The gold answer against the answer of the first item of the ability with the other label."""
    alts = [
        o["messages"][-1]["content"]
        for o in same_ability
        if o["answer_kind"] == item["answer_kind"] and o["gold"] != item["gold"]
    ]
    return (item["messages"][-1]["content"], alts[:1]) if alts else None


def _other_golds(item: Item, same_ability: Sequence[Item]) -> Alternatives:
    """The gold against up to 3 other golds of the ability, from a position set by the uid."""
    others = [o["gold"] for o in same_ability if o["gold"] and o["gold"] != item["gold"]]
    start = sum(map(ord, item["uid"])) % max(len(others), 1)
    alts = list(dict.fromkeys(others[start:] + others[:start]))[:3]
    return (item["gold"], alts) if item["gold"] and alts else None


def _ranked_alternatives(item: Item, same_ability: Sequence[Item]) -> Alternatives:
    """The gold text against every other ranked text (a formulated item's ``choices``)."""
    return (item["choices"][0], list(item["choices"][1:])) if len(item["choices"]) > 1 else None


def _letter(text: str) -> str:
    return unicodedata.normalize("NFKC", text).strip()


def _texts_of_options(question: str, letters: Sequence[str]) -> dict[str, str]:
    """{letter: text} of ``letters``; ValueError when one has no text to rank."""
    texts = option_texts(question)
    lacking = [x for x in letters if x not in texts]
    if lacking:
        raise ValueError(
            f"option {', '.join(lacking)} has no text (the text formulation ranks option texts)"
        )
    return texts


def _examples_as_text(messages: list[dict]) -> list[dict]:
    """Copies of ``messages`` whose solved examples (an earlier user turn with options, then an
    assistant turn that is one of its letters: a few-shot record's) answer with the text."""
    out = [dict(m) for m in messages]
    for i in range(0, len(out) - 2, 2):
        texts, letter = option_texts(out[i]["content"]), _letter(out[i + 1]["content"])
        if letter in texts:
            out[i]["content"] = without_options(out[i]["content"])
            out[i + 1]["content"] = texts[letter]
    return out


def _answered(messages: list[dict], question: str, answer: str) -> list[dict]:
    return [
        *messages[:-2],
        {"role": "user", "content": question},
        {"role": "assistant", "content": answer},
    ]


def _mc_as_text(item: Item) -> tuple[list[dict], list[str]]:
    """The question without its option lines, answered by the gold option's text; every
    option's text ranked, the gold's first (few-shot examples re-rendered the same way)."""
    question = item["messages"][-2]["content"]
    texts = _texts_of_options(question, item["options"])
    ranked = [texts[item["gold"]], *(texts[x] for x in item["options"] if x != item["gold"])]
    messages = _examples_as_text(item["messages"])
    return _answered(messages, without_options(question), ranked[0]), ranked


def _tf_as_text(item: Item) -> tuple[list[dict], list[str]]:
    """The stored label (正确, 对, T, √ or V, or its false counterpart) against its pair's other."""
    said, wrong = (
        (TRUE_LABELS, FALSE_LABELS) if item["gold"] == "T" else (FALSE_LABELS, TRUE_LABELS)
    )
    label = item["messages"][-1]["content"].strip()
    if label not in said:
        raise ValueError(f"true/false answer {label!r} is not one of {', '.join(said)}")
    ranked = [label, wrong[said.index(label)]]
    return _answered(item["messages"], item["messages"][-2]["content"], label), ranked


def _multiselect_as_text(item: Item) -> tuple[list[dict], list[str]]:
    """The question without its option lines, answered by the gold set's option texts (in
    option order, joined by ``SET_JOIN``); every set of the gold's size ranked, the gold's first."""
    question = item["messages"][-2]["content"]
    texts = _texts_of_options(question, item["options"])
    sets = ["".join(s) for s in combinations(item["options"], len(item["gold"]))]
    ranked = [
        SET_JOIN.join(texts[x] for x in s)
        for s in [item["gold"]] + [s for s in sets if s != item["gold"]]
    ]
    return _answered(item["messages"], without_options(question), ranked[0]), ranked


# Registry order is the order of every per-kind table written (budgets, counts, rules).
KINDS: tuple[AnswerKind, ...] = (
    AnswerKind(
        MC,
        gold="one option letter",
        generated=True,
        default_budget=STUDY_MAX_NEW_TOKENS,
        chance=_one_option,
        ranked=None,
        alternatives=_option_alternatives,
        formulated=((TEXT, MC_TEXT),),
    ),
    AnswerKind(
        TF,
        gold=f"a true/false label ({'/'.join(TRUE_LABELS)} or {'/'.join(FALSE_LABELS)})",
        generated=True,
        default_budget=STUDY_MAX_NEW_TOKENS,
        chance=_half,
        ranked=None,
        alternatives=_other_label,
        formulated=((TEXT, TF_TEXT),),
    ),
    AnswerKind(
        MULTISELECT,
        gold="a set of option letters on the last line",
        generated=True,
        default_budget=STUDY_MAX_NEW_TOKENS,
        chance=_option_set,
        ranked=None,
        alternatives=_option_alternatives,
        formulated=((TEXT, MULTISELECT_TEXT),),
    ),
    AnswerKind(
        CLOZE,
        gold="a Chinese text span",
        generated=True,
        default_budget=STUDY_MAX_NEW_TOKENS,
        chance=_none,
        ranked=None,
        alternatives=_other_golds,
    ),
    AnswerKind(
        MATH,
        gold="a final answer in the record's `answer` field",
        generated=True,
        default_budget=STUDY_MAX_NEW_TOKENS,
        chance=_none,
        ranked=None,
        alternatives=_other_golds,
    ),
    AnswerKind(
        OPEN,
        gold="the first of 3 choices (two distractors follow)",
        generated=False,
        default_budget=None,
        chance=_one_choice,
        ranked=_choices,
        alternatives=_choice_alternatives,
    ),
    AnswerKind(
        MC_TEXT,
        gold="the gold option's text (every option's text ranked)",
        generated=False,
        default_budget=None,
        chance=_one_choice,  # 1 / options
        ranked=_choices,
        alternatives=_ranked_alternatives,
        rewrite=_mc_as_text,
    ),
    AnswerKind(
        TF_TEXT,
        gold="the true/false label's text (ranked against its counterpart)",
        generated=False,
        default_budget=None,
        chance=_one_choice,  # 1 / 2
        ranked=_choices,
        alternatives=_ranked_alternatives,
        rewrite=_tf_as_text,
    ),
    AnswerKind(
        MULTISELECT_TEXT,
        gold="the gold set's option texts (every set of its size ranked)",
        generated=False,
        default_budget=None,
        chance=_one_choice,  # 1 / C(m, k), as the letter kind's
        ranked=_choices,
        alternatives=_ranked_alternatives,
        rewrite=_multiselect_as_text,
    ),
)
ANSWER_KINDS: tuple[str, ...] = tuple(k.name for k in KINDS)
GENERATED_KINDS: tuple[str, ...] = tuple(k.name for k in KINDS if k.generated)  # a budget each
_KIND_BY_NAME = {k.name: k for k in KINDS}


def kind(name: str) -> AnswerKind:
    """The answer kind registered as ``name`` (KeyError naming the known kinds)."""
    try:
        return _KIND_BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown answer kind {name!r}; known: {', '.join(ANSWER_KINDS)}") from None


def check_formulation(formulation: str) -> str:
    if formulation not in FORMULATIONS:
        raise ValueError(
            f"formulation: expected one of {', '.join(FORMULATIONS)}, got {formulation!r}"
        )
    return formulation


def formulate(item: Item, formulation: str) -> Item:
    """``item`` as ``formulation`` asks it: the same item for ``letter`` and for kinds the
    formulation leaves alone (cloze, math, open, synthetic records); else a copy whose
    messages are rewritten (the final turns, and the solved examples of a few-shot record),
    whose ``choices`` are the texts to rank (gold first), ``gold`` the gold's text, and whose
    ``answer_kind`` and ``chance`` are the target kind's. ValueError naming the item's file
    and line when it cannot be rewritten (an option without a text)."""
    check_formulation(formulation)
    if item.get("answer_kind") is None:
        return item
    target = kind(kind(item["answer_kind"]).in_formulation(formulation))
    if target.name == item["answer_kind"]:
        return item
    try:
        messages, ranked = target.rewrite(item)
    except ValueError as e:
        where = f"{item.get('source', '<item>')}:{item.get('line', 0)}"
        raise ValueError(f"{where}: {formulation} formulation: {e}") from None
    out = {
        **item,
        "messages": messages,
        "choices": ranked,
        "gold": ranked[0],
        "options": [],
        "answer_kind": target.name,
    }
    return {**out, "chance": target.chance(out)}
