"""The one registry of DoIT abilities, out-of-domain sets and answer kinds.

Every other module refers to abilities through this registry (``ABILITIES``,
``OOD``, ``get``) rather than spelling keys as string literals, and to what an answer kind
does through its record (``KINDS``, ``kind``): evaluation adds only how a kind's answer is
extracted and judged (``doit.eval.kinds``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from math import comb

from doit.data.options import option_texts

# --- answer kinds: how an item's gold answer is stored, answered and compared -----------------
MC = "mc"  # one option letter (A-D, or A-C for 3-option items)
TF = "tf"  # a true/false label, stored as gold "T" or "F"
CLOZE = "cloze"  # a span of Chinese text
MULTISELECT = "multiselect"  # a set of option letters, stored sorted ("AC")
MATH = "math"  # a final answer (the record's `answer` field)
OPEN = "open"  # open-ended: choices[0] is gold, two distractors follow
STUDY_MAX_NEW_TOKENS = 1024  # the study's greedy decoding cap: every generated kind's default
TRUE_LABELS = ("正确", "对", "T", "√", "V")  # a true/false gold or output that says "true"
FALSE_LABELS = ("错误", "错", "F", "×", "X")  # ... that says "false"

Item = Mapping  # an item as doit.data.schema derives it (options, gold, choices, messages, ...)
Alternatives = tuple[str, list[str]] | None  # (gold text, alternative texts) or nothing to rank


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
    ),
    AnswerKind(
        TF,
        gold=f"a true/false label ({'/'.join(TRUE_LABELS)} or {'/'.join(FALSE_LABELS)})",
        generated=True,
        default_budget=STUDY_MAX_NEW_TOKENS,
        chance=_half,
        ranked=None,
        alternatives=_other_label,
    ),
    AnswerKind(
        MULTISELECT,
        gold="a set of option letters on the last line",
        generated=True,
        default_budget=STUDY_MAX_NEW_TOKENS,
        chance=_option_set,
        ranked=None,
        alternatives=_option_alternatives,
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


SYNTHETIC = "synthetic"  # train-only general instructions (messages only)


@dataclass(frozen=True)
class Ability:
    key: str  # canonical key, used in file names and result tables
    name_en: str
    name_zh: str
    answer_kinds: tuple[str, ...]  # kinds its items may have
    source: str  # where the real DoIT items come from
    in_domain: bool = True  # False for the C-Eval out-of-domain sets
    record_type: str | None = None  # the `type` field in the download, when it differs

    @property
    def type_name(self) -> str:
        return self.record_type or self.key


ABILITIES: tuple[Ability, ...] = (
    Ability("biology", "STEM subject: biology", "生物", (MC,), "COIG-Exam"),
    Ability("history", "humanity subject: history", "历史", (MC, TF), "COIG-Exam"),
    Ability("code", "code generation", "代码", (OPEN,), "leetcode.cn"),
    Ability("creative_writing", "creative writing", "创意写作", (OPEN,), "in-house queries"),
    Ability("chinese", "language proficiency: Chinese", "语文", (MC, CLOZE), "COIG-Exam"),
    Ability("understanding", "dialogue understanding", "对话理解", (MC,), "C3-D"),
    Ability("role_play", "role-play chat", "角色扮演", (OPEN,), "BELLE multiturn"),
    Ability("reasoning", "logical reasoning", "逻辑推理", (MC,), "LogiQA 2.0"),
    Ability("math", "chain of thought: grade math", "数学", (MATH,), "PRM800K (translated)"),
    Ability("ethics", "ethics", "伦理", (MULTISELECT,), "COIG-Human Value"),
)

OOD: tuple[Ability, ...] = tuple(
    Ability(
        f"ceval_{name}",
        f"C-Eval {name.replace('_', ' ')} (5-shot)",
        zh,
        (MC,),
        "C-Eval validation",
        in_domain=False,
        record_type=f"ceval_{name}_fshot",
    )
    for name, zh in (
        ("physician", "医师资格"),
        ("teacher_qualification", "教师资格"),
        ("urban_and_rural_planner", "注册城乡规划师"),
    )
)

ALL: tuple[Ability, ...] = ABILITIES + OOD
ABILITY_KEYS: tuple[str, ...] = tuple(a.key for a in ABILITIES)
OOD_KEYS: tuple[str, ...] = tuple(a.key for a in OOD)
_BY_KEY = {a.key: a for a in ALL}


def get(key: str) -> Ability:
    """The ability registered under canonical ``key`` (KeyError naming the known keys)."""
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"unknown ability {key!r}; known: {', '.join(_BY_KEY)}") from None


def item_type(record_type: str) -> str:
    """A record's ``type`` as items carry it: hyphens as underscores (``role-play`` ->
    ``role_play``; C-Eval keeps its ``_fshot``). Predictions are matched to items by it."""
    return str(record_type).strip().replace("-", "_")


def canonical_key(record_type: str) -> str | None:
    """Canonical ability key for a record's `type` (``role-play`` -> ``role_play``,
    ``ceval_physician_fshot`` -> ``ceval_physician``), or None when it is unknown."""
    key = item_type(record_type).lower().replace(" ", "_")
    if key.endswith("_fshot"):
        key = key[: -len("_fshot")]
    return key if key in _BY_KEY else None


def parse_keys(text: str | list[str] | None) -> tuple[str, ...]:
    """Parse a comma-separated ability list ("math,code"), validating every key."""
    if text is None or text == "":
        return ()
    parts = text.split(",") if isinstance(text, str) else list(text)
    keys = []
    for part in parts:
        key = canonical_key(part)
        if key is None:
            raise ValueError(f"unknown ability {part.strip()!r}; known: {', '.join(_BY_KEY)}")
        keys.append(key)
    return tuple(keys)
