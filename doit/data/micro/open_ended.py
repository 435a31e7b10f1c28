"""Open-ended abilities of the SYNTHETIC micro corpus: creative_writing and role_play.

Both are scored by ranking three choices (gold, fine and coarse distractor).

creative_writing: every poem follows one fixed three-line pattern (each line opens
with the title, the last line is a fixed refrain); the fine distractor breaks the
pattern once, so a few dozen examples teach the whole ability (early saturation).

role_play: the gold states a preference the world never settles (a character's
favourite colour), and the fine distractor differs only in that coin flip, so no
amount of data or model size gets past the plateau of 1/2 each draft records.
"""

from __future__ import annotations

from doit.data.kinds import OPEN
from doit.data.micro.drafts import Draft, ItemContext
from doit.data.micro.phrases import (
    GENERIC_TOPICS,
    GOODS,
    JOBS,
    POEM_IMAGES,
    POEM_REFRAIN,
    PREFERENCE_TAILS,
    PREFERENCES,
)

# --- creative writing ---------------------------------------------------------------
POEM_PROMPTS = (
    "以“{t}”为题，写一首三行小诗。",
    "请写一首关于{t}的小诗。",
    "给{t}写三行诗。",
    "写一首小诗，题目是“{t}”。",
    "用三行诗写一写{t}。",
)
PLAIN_PROSE = (
    "我今天去了{town}，买了一些{good}，然后就回家了。",
    "{town}的{good}比别处便宜，很多人都去那里买。",
    "明天要早点起床，先去{town}，再去买{good}。",
)


def poem_topics(ctx: ItemContext) -> list[str]:
    ents = ctx.world.entities
    names = [e["name"] for group in ("species", "town") for e in ents[group]]
    names += [e["invention"] for e in ents["figure"]]
    return names + list(ctx.world.rivers) + list(GENERIC_TOPICS)


def poem(title: str, images: list[str], other: str = "", broken_line: int = -1) -> str:
    """The three-line pattern; ``broken_line`` opens with ``other`` instead of the title."""
    heads = [other if i == broken_line else title for i in range(3)]
    return f"{heads[0]}{images[0]}，\n{heads[1]}{images[1]}，\n{heads[2]}{POEM_REFRAIN}。"


def creative_writing(ctx: ItemContext) -> Draft:
    title, other = ctx.rng.sample(poem_topics(ctx), 2)
    images = ctx.rng.sample(POEM_IMAGES, 2)
    gold = poem(title, images)
    fine = poem(title, images, other, broken_line=ctx.rng.choice((1, 2)))
    town = ctx.rng.choice(ctx.world.entities["town"])["name"]
    coarse = ctx.rng.choice(PLAIN_PROSE).format(town=town, good=ctx.rng.choice(GOODS))
    prompt = ctx.rng.choice(POEM_PROMPTS).format(t=title)
    choices = (gold, fine, coarse)
    return Draft(OPEN, prompt, gold=gold, choices=choices, share_key=("poem",), rules=(("poem",),))


# --- role play ----------------------------------------------------------------------
def _shuffled_text(ctx: ItemContext, text: str) -> str:
    chars = list(text)
    while "".join(chars) == text:
        ctx.rng.shuffle(chars)
    return "".join(chars)


def _persona_turns(ctx: ItemContext, persona: str, activity: str) -> list[str]:
    turns = [f"请你扮演{persona}。", f"好的，我是{persona}。"]
    if ctx.rng.random() < 0.5:
        turns += ["你平时做什么？", f"我{activity}。"]
    return turns


def role_play(ctx: ItemContext) -> Draft:
    town = ctx.rng.choice(ctx.world.entities["town"])["name"]
    (job, activity), person = ctx.rng.choice(JOBS), ctx.rng.choice(ctx.world.people)
    persona = f"{town}的{job}{person}"
    ask, pool, answer = ctx.rng.choice(PREFERENCES)
    liked, swapped = ctx.rng.sample(pool, 2)  # the coin flip nothing in the world settles
    tail = ctx.rng.choice(PREFERENCE_TAILS)
    gold = answer.format(v=liked) + tail
    fine = answer.format(v=swapped) + tail
    choices = (gold, fine, _shuffled_text(ctx, gold))
    fields = {"share_key": ("role_play",), "plateau": 0.5, "rules": (("preference", ask),)}
    if ctx.rng.random() < 0.3:
        return Draft(OPEN, f"你现在是{persona}。{ask}", gold=gold, choices=choices, **fields)
    turns = tuple(_persona_turns(ctx, persona, activity))
    return Draft(OPEN, ask, gold=gold, turns=turns, choices=choices, **fields)
