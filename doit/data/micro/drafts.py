"""Item drafts of the SYNTHETIC micro corpus, shared by the ability modules.

A ``Draft`` is an item before its gold letter is placed and its idx assigned;
``ItemContext`` is what a draft maker may use (the world, an RNG, the facts of one
split); ``weighted_choice`` is the one weighted pick of the generators.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from doit.data.kinds import MC, MULTISELECT
from doit.data.micro.world import Fact, World
from doit.data.options import OPTION_LETTERS as LETTERS


@dataclass(frozen=True)
class Draft:
    kind: str  # an answer kind of doit.data.kinds (MC, TF, CLOZE, ...)
    question: str  # the final user message, option lines excluded
    options: tuple[str, ...] = ()  # MC: gold first; MULTISELECT: in display order
    gold: str = ""  # final assistant message for every kind but MC
    turns: tuple[str, ...] = ()  # earlier messages, alternating user/assistant
    choices: tuple[str, ...] = ()  # OPEN: gold, fine-grained, coarse-grained
    answer: str | None = None  # MATH: the boxed value
    share_key: tuple = ()  # the fact or format this item rests on
    steps: int = 1  # reasoning/arithmetic steps from prompt (and facts) to answer
    plateau: float | None = None  # best achievable score when the gold is a coin flip
    plateau_text: float | None = None  # the same in the text formulation (None: as plateau)
    # The answer rules the gold applies, each a tuple naming one branch of the generator (an
    # attribute asked in one form, a puzzle kind, an arithmetic operation): the ability's dose
    # lever counts the distinct rules its train items draw from (ground_truth.json's `dose`).
    rules: tuple[tuple, ...] = ()
    recall: bool = False  # the gold rests on a fact only the pretraining prose states
    cluster: str | None = None  # held-out items asking one fact share it (the record's key)

    @property
    def stem(self) -> tuple:
        """What must differ between splits: the prompt without option lines (multi-select
        items differ only in their options, so theirs count)."""
        if self.kind == MULTISELECT:
            return (self.turns, self.question, tuple(sorted(self.options)))
        return (self.turns, self.question)

    @property
    def identity(self) -> tuple:
        return (self.turns, self.question, tuple(sorted(self.options)), self.gold)


def option_lines(options: list[str] | tuple[str, ...], mark: str = ". ") -> str:
    return "\n".join(f"{LETTERS[i]}{mark}{opt}" for i, opt in enumerate(options))


def render_mc(draft: Draft, pos: int, mark: str = ". ") -> tuple[str, str]:
    """(final user message with option lines, gold letter) with the gold option at ``pos``;
    ``mark`` follows each letter (``.`` alone: the compact lines of the 5-shot sets)."""
    options = list(draft.options[1:])
    options.insert(pos, draft.options[0])
    return draft.question + "\n" + option_lines(options, mark), LETTERS[pos]


class ItemContext:
    """What a draft maker may use: the world, an RNG and the facts of one split."""

    def __init__(self, world: World, rng: random.Random, facts: dict[str, list[Fact]], split: str):
        self.world, self.rng, self.split = world, rng, split
        self._facts = facts
        self._cursor: dict[tuple, int] = {}

    def fact(self, group: str, attrs: tuple[str, ...] = ()) -> Fact:
        """The next fact of ``group`` (optionally limited to ``attrs``), cycling the split."""
        pool = [f for f in self._facts[group] if not attrs or f.attr in attrs]
        key = (group, attrs)
        i = self._cursor.get(key, 0)
        self._cursor[key] = i + 1
        return pool[i % len(pool)]

    def others(self, values: list[str], exclude: str, k: int) -> list[str]:
        return self.rng.sample([v for v in values if v != exclude], k)


# --- shared helpers ----------------------------------------------------------------
OPTION_FORMATS = {
    ("species", "lifespan"): "{}年",
    ("species", "cls"): "{}类",
    ("dynasty", "start"): "{}年",
    ("dynasty", "years"): "{}年",
    ("town", "gates"): "{}座",
}


def fact_mc(ctx: ItemContext, fact: Fact, templates: dict[str, tuple[str, ...]]) -> Draft:
    """A four-option question on ``fact.value``, distractors from the attribute's domain."""
    fmt = OPTION_FORMATS.get((fact.group, fact.attr), "{}")
    wrong = ctx.others(ctx.world.domain(fact.group, fact.attr), fact.value, 3)
    question = ctx.rng.choice(templates[fact.attr]).format(name=fact.subject)
    options = tuple(fmt.format(v) for v in [fact.value, *wrong])
    return Draft(MC, question, options, **fact_fields(fact, "mc"))


def fact_fields(fact: Fact, form: str) -> dict:
    """The Draft fields every fact item shares: its share key, its one rule (the attribute
    asked in ``form``) and recall (the fact is stated only in the pretraining prose)."""
    return {"share_key": fact.key, "rules": ((form, fact.group, fact.attr),), "recall": True}


T = TypeVar("T")


def weighted_choice(rng: random.Random, weighted: Sequence[tuple[T, int]]) -> T:
    """One of ``(option, weight)`` with probability weight / total, from one ``rng.random()``.

    The draw picks the first option whose cumulative share ``sum(weights so far) / total``
    exceeds it. Shares are int / int, correctly rounded, so weights 30/25/25/20 compare
    the draw with exactly the floats 0.3, 0.55 and 0.8.
    """
    if not weighted:
        raise ValueError("weighted_choice: no options to choose from")
    for option, weight in weighted:
        if not isinstance(weight, int) or weight <= 0:
            raise ValueError(
                f"weighted_choice: option {option!r} has weight {weight!r}; "
                "weights must be positive integers"
            )
    total = sum(weight for _, weight in weighted)
    roll, cumulative = rng.random(), 0
    for option, weight in weighted[:-1]:
        cumulative += weight
        if roll < cumulative / total:
            return option
    return weighted[-1][0]
