"""The one registry of DoIT abilities and out-of-domain sets.

Every other module refers to abilities through this registry (``ABILITIES``, ``OOD``,
``get``) rather than spelling keys as string literals. What an ability's answer kinds are and
do lives in ``doit.data.kinds``.
"""

from __future__ import annotations

from dataclasses import dataclass

from doit.data import kinds as ak

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
    Ability("biology", "STEM subject: biology", "生物", (ak.MC,), "COIG-Exam"),
    Ability("history", "humanity subject: history", "历史", (ak.MC, ak.TF), "COIG-Exam"),
    Ability("code", "code generation", "代码", (ak.OPEN,), "leetcode.cn"),
    Ability("creative_writing", "creative writing", "创意写作", (ak.OPEN,), "in-house queries"),
    Ability("chinese", "language proficiency: Chinese", "语文", (ak.MC, ak.CLOZE), "COIG-Exam"),
    Ability("understanding", "dialogue understanding", "对话理解", (ak.MC,), "C3-D"),
    Ability("role_play", "role-play chat", "角色扮演", (ak.OPEN,), "BELLE multiturn"),
    Ability("reasoning", "logical reasoning", "逻辑推理", (ak.MC,), "LogiQA 2.0"),
    Ability("math", "chain of thought: grade math", "数学", (ak.MATH,), "PRM800K (translated)"),
    Ability("ethics", "ethics", "伦理", (ak.MULTISELECT,), "COIG-Human Value"),
)

OOD: tuple[Ability, ...] = tuple(
    Ability(
        f"ceval_{name}",
        f"C-Eval {name.replace('_', ' ')} (5-shot)",
        zh,
        (ak.MC,),
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
