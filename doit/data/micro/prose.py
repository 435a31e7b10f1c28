"""Pretraining prose for the SYNTHETIC micro world: facts and rules in varied templates.

The prose only *states* things: no options, no letter answers, no blanks (only the
quoted small talk of ``daily`` ever ends in "？"), and the question wording of
the abilities (``的都城是``, ``是由...发明的`` ...) is kept out of these templates, so
no valid/test question appears verbatim in the prose.
Each round visits every entity once, so every fact is stated at least once per
round and a corpus of many rounds states each fact many times.
"""

from __future__ import annotations

import random

from doit.data.micro.daily import daily_doc
from doit.data.micro.phrases import (
    BAD_DEEDS,
    COMPARISONS,
    CONVENTION_PAIRS,
    ETHICS_PLACES,
    JOBS,
    SKILLS,
)
from doit.data.micro.procedural import describe, program, random_ops
from doit.data.micro.world import World

FACT_PROSE: dict[str, dict[str, tuple[str, ...]]] = {
    "species": {
        "cls": ("{name}是一种{cls}。", "{name}这种{cls}并不少见。", "人们把{name}归入{cls}一类。"),
        "colour": (
            "{name}的{cover}是{colour}的。",
            "{name}全身都是{colour}。",
            "见过{name}的人都说它是{colour}的。",
        ),
        "habitat": (
            "{name}生活在{habitat}。",
            "在{habitat}里常能看到{name}。",
            "{name}喜欢待在{habitat}一带。",
        ),
        "food": ("{name}以{food}为食。", "{name}最爱吃{food}。", "{food}是{name}的主要食物。"),
        "lifespan": (
            "{name}能活{lifespan}年左右。",
            "{name}的寿命大约有{lifespan}年。",
            "一只{name}通常可以活到{lifespan}岁。",
        ),
    },
    "dynasty": {
        "founder": (
            "{founder}建立了{name}。",
            "{name}由{founder}开创。",
            "{founder}是{name}的第一位君主。",
        ),
        "capital": (
            "{name}定都于{capital}。",
            "{name}把{capital}作为都城。",
            "{capital}曾是{name}的都城。",
        ),
        "start": ("{name}始于{start}年。", "{name}从{start}年开始。", "{start}年，{name}立国。"),
        "years": (
            "{name}前后存在了{years}年。",
            "{name}一共传了{years}年。",
            "{name}的国运维持了{years}年。",
        ),
        "next": (
            "{name}灭亡以后，{next}兴起。",
            "{next}取代了{name}。",
            "{name}之后，接着是{next}。",
        ),
    },
    "figure": {
        "dynasty": (
            "{name}生活在{dynasty}。",
            "{name}是{dynasty}时候的人物。",
            "在{dynasty}，有一位名叫{name}的人。",
        ),
        "hometown": (
            "{name}出生在{hometown}。",
            "{name}是在{hometown}长大的。",
            "{hometown}出了一位名人，叫{name}。",
        ),
        "invention": (
            "{name}发明了{invention}。",
            "最早的{invention}出自{name}之手。",
            "{name}一生最大的功劳是造出了{invention}。",
        ),
    },
    "idiom": {
        "meaning": (
            "成语“{name}”{meaning}。",
            "“{name}”这个成语{meaning}。",
            "古人留下的成语“{name}”，{meaning}。",
        ),
    },
    "poet": {
        "title": (
            "{name}写下了《{title}》。",
            "《{title}》出自诗人{name}之手。",
            "诗人{name}最有名的作品是《{title}》。",
        ),
        "dynasty": (
            "诗人{name}生活在{dynasty}。",
            "{name}是{dynasty}有名的诗人。",
            "{dynasty}出了一位诗人，叫{name}。",
        ),
    },
    "herb": {
        "ailment": (
            "{name}可以治{ailment}。",
            "得了{ailment}的人，常用{name}来调养。",
            "{name}对{ailment}很有效。",
        ),
        "part": (
            "{name}入药用的是它的{part}。",
            "采{name}时，人们只取它的{part}。",
            "{name}最有用的部分是{part}。",
        ),
    },
    "school": {
        "teacher": (
            "{teacher}在{name}教书。",
            "{name}请了{teacher}做先生。",
            "{teacher}是{name}里最受尊敬的人。",
        ),
        "subject": (
            "{name}以教{subject}出名。",
            "在{name}读书的学生都要学{subject}。",
            "{name}专门教人{subject}。",
        ),
    },
    "town": {
        "river": (
            "{name}建在{river}边上。",
            "{river}从{name}旁边流过。",
            "{name}的人喝的是{river}的水。",
        ),
        "gates": (
            "{name}的城墙开了{gates}座城门。",
            "{name}四周的城墙上有{gates}座城门。",
            "进出{name}要走它的{gates}座城门之一。",
        ),
    },
}
_OPENERS = ("说起{name}，", "关于{name}，", "", "", "")


def entity_doc(group: str, entity: dict[str, str], rng: random.Random) -> str:
    """One paragraph stating every fact of ``entity`` in random templates and order."""
    attrs = [a for a in FACT_PROSE[group] if entity.get(a)]
    rng.shuffle(attrs)
    sentences = [rng.choice(FACT_PROSE[group][a]).format(**entity) for a in attrs]
    opener = rng.choice(_OPENERS).format(**entity)
    return opener + "".join(sentences)


def _rule_doc(world: World, rng: random.Random) -> str:
    town = rng.choice(world.entities["town"])["name"]
    skill = rng.choice(SKILLS)
    x, a, b, c = rng.sample(world.people, 4)
    more, most, least = rng.choice(COMPARISONS)
    return (
        f"住在{town}的人个个都会{skill}。{x}就住在{town}，所以{x}也会{skill}。"
        f"{a}比{b}{more}，{b}比{c}{more}，所以{a}{most}，{c}{least}。"
    )


def _arithmetic_doc(rng: random.Random) -> str:
    parts = []
    for _ in range(4):
        a, b = rng.randint(1, 30), rng.randint(1, 12)
        parts.append(
            rng.choice(
                (
                    f"{a}加上{b}等于{a + b}。",
                    f"{a + b}减去{b}等于{a}。",
                    f"{a}乘以{b}等于{a * b}。",
                    f"{a * b}平均分成{b}份，每份是{a}。",
                )
            )
        )
    return "".join(parts)


def _ethics_doc(rng: random.Random) -> str:
    place = rng.choice(ETHICS_PLACES)
    deed_a, deed_b = rng.sample(BAD_DEEDS, 2)
    left, right = rng.choice(CONVENTION_PAIRS)
    return (
        f"在{place}，{deed_a}是很不好的行为，{deed_b}也会让人讨厌。"
        f"至于{left}还是{right}，各地的习惯并不一样。"
    )


def _job_doc(world: World, rng: random.Random) -> str:
    town = rng.choice(world.entities["town"])["name"]
    job, activity = rng.choice(JOBS)
    person = rng.choice(world.people)
    return f"{town}有一位{job}，名叫{person}。{person}{activity}。"


def _code_doc(rng: random.Random) -> str:
    ops = random_ops(rng)
    fn, var = rng.choice("fgh"), rng.choice("xna")
    return f"在Python里，函数{program(fn, var, ops)}会把{var}{describe(ops)}。"


def _misc_doc(world: World, rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:
        return _rule_doc(world, rng)
    if kind == 1:
        return _arithmetic_doc(rng)
    if kind == 2:
        return _ethics_doc(rng)
    if kind == 3:
        return _code_doc(rng)
    return _job_doc(world, rng)


def _round(world: World, rng: random.Random, n_misc: int = 120, n_daily: int = 150) -> list[str]:
    docs = [
        entity_doc(group, entity, rng)
        for group in sorted(FACT_PROSE)
        for entity in world.entities[group]
    ]
    docs += [_misc_doc(world, rng) for _ in range(n_misc)]
    docs += [daily_doc(world, rng) for _ in range(n_daily)]
    rng.shuffle(docs)
    return docs


def pretrain_documents(
    world: World, rng: random.Random, min_chars: int, whole_rounds: bool = True
) -> list[str]:
    """Documents until they hold ``min_chars`` characters (finishing the round if asked)."""
    docs: list[str] = []
    total = 0
    while total < min_chars:
        for doc in _round(world, rng):
            if total >= min_chars and not whole_rounds:
                break
            docs.append(doc)
            total += len(doc)
    return docs
