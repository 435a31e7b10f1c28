"""The general-instruction chat of the SYNTHETIC micro corpus.

Free-form chat about the world (descriptions, travel plans, small talk), with no
options, letters or boxed answers, like the study's GPT-4 data that did little for
the per-ability tests.
"""

from __future__ import annotations

import random

from doit.data.micro.drafts import weighted_choice
from doit.data.micro.phrases import GENERAL_CHAT, WISHES
from doit.data.micro.prose import entity_doc
from doit.data.micro.world import World

ASK_ABOUT = {
    "species": ("能给我介绍一下{name}吗？", "{name}是什么样的动物？", "我想多了解一点{name}。"),
    "dynasty": ("给我讲讲{name}的历史吧。", "{name}是个怎样的朝代？"),
    "figure": ("{name}是个什么样的人？", "讲讲{name}的故事吧。"),
    "town": ("{name}是个怎样的地方？", "我想去{name}看看，那里怎么样？"),
    "idiom": ("“{name}”这个成语怎么用？", "给我讲讲“{name}”。"),
    "herb": ("{name}有什么用处？", "听说过{name}吗？"),
    "school": ("{name}是个什么样的地方？", "我想去{name}读书，你了解它吗？"),
    "poet": ("介绍一下诗人{name}。", "{name}写过什么诗？"),
}
TOPIC_GROUPS = tuple(sorted(ASK_ABOUT))


def _turn(user: str, assistant: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]


def _ask_about(world: World, rng: random.Random) -> list[dict[str, str]]:
    group = rng.choice(TOPIC_GROUPS)
    entity = rng.choice(world.entities[group])
    question = rng.choice(ASK_ABOUT[group]).format(name=entity["name"])
    answer = rng.choice(("好的。", "当然可以。", "")) + entity_doc(group, entity, rng)
    return _turn(
        question, answer + rng.choice(("有机会你可以亲自去看看。", "希望这些对你有帮助。", ""))
    )


def _travel_plan(world: World, rng: random.Random) -> list[dict[str, str]]:
    first, second = rng.sample(world.entities["town"], 2)
    question = f"帮我安排一下去{first['name']}和{second['name']}的两天行程。"
    answer = (
        f"第一天先到{first['name']}，沿着{first['river']}走一走，看看那里的城门。"
        f"第二天去{second['name']}，在{second['river']}边上吃顿饭，傍晚再回来。"
    )
    return _turn(question, answer)


def _small_talk(world: World, rng: random.Random) -> list[dict[str, str]]:
    if rng.random() < 0.5:
        return _turn(*rng.choice(GENERAL_CHAT))
    person = rng.choice(world.people)
    return _turn(f"帮我给{person}写一句生日祝福。", f"祝{person}生日快乐，{rng.choice(WISHES)}！")


CHAT_KINDS = ((_ask_about, 70), (_travel_plan, 15), (_small_talk, 15))  # (maker, weight %)


def _chat(world: World, rng: random.Random) -> list[dict[str, str]]:
    messages = weighted_choice(rng, CHAT_KINDS)(world, rng)
    if rng.random() < 0.2:
        messages = _turn("你好！", "你好！有什么可以帮你的吗？") + messages
    return messages


def general_instructions(world: World, seed: int, count: int) -> list[dict]:
    """``count`` messages-only chat records about the world."""
    rng = random.Random(f"micro-synthetic:{seed}")
    return [{"messages": _chat(world, rng)} for _ in range(count)]
