"""Exam practice for the SYNTHETIC micro pretraining text: quizzes on train-split facts.

Real pretraining corpora contain exam questions with their answers; the micro bases
need them too, because a few hundred fine-tuning items cannot teach a 0.2M-2M
parameter model to recall a fact from a question's wording *and* pick the option
letter that states it (``studies/micro_study/README.md`` has the measurements).

Each practice document is one line: a question drawn by the abilities' own draft
makers over the **train** split of the facts (``ItemContext`` hands out nothing
else), its options inline and its answer, in varied templates; knowledge questions
also come as plain question-and-answer pairs. In-context puzzles (understanding,
reasoning) are fresh draws whose stem no valid/test item has, and match drills teach
the bare letter skill (the option that says what the question names). Held-out facts
stay in the plain prose only, so a test item still measures recall of a fact never
quizzed. The shipped world has none of it (``build_micro(practice_fraction=0)``).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from doit.data.kinds import CLOZE, MC, TF
from doit.data.micro.drafts import Draft, ItemContext, render_mc
from doit.data.micro.in_context import reasoning, understanding
from doit.data.micro.knowledge import biology, chinese, history
from doit.data.micro.phrases import GOODS, LIKES, SKILLS
from doit.data.micro.world import COLOURS, FOODS, HABITATS, Fact, World

MATCH_POOLS = (COLOURS, FOODS, HABITATS, GOODS, SKILLS, LIKES)
MATCH_QUESTIONS = ("下列哪一项是{x}？", "哪个选项写的是{x}？", "选出{x}。", "{x}是哪一项？")


def match_drill(ctx: ItemContext) -> Draft:
    """The bare letter skill: find the option that says what the question names."""
    pool = ctx.rng.choice(
        MATCH_POOLS + (ctx.world.people, [t["name"] for t in ctx.world.entities["town"]])
    )
    options = tuple(ctx.rng.sample(list(pool), ctx.rng.choice((3, 4))))
    question = ctx.rng.choice(MATCH_QUESTIONS).format(x=options[0])
    return Draft(MC, question, options, share_key=("practice", "match"))


# (draft maker, share of the practice documents, is it a knowledge ability)
PRACTICE_MAKERS: tuple[tuple[Callable[[ItemContext], Draft], int, bool], ...] = (
    (biology, 20, True),
    (history, 15, True),
    (chinese, 15, True),
    (understanding, 15, False),
    (reasoning, 15, False),
    (match_drill, 20, False),
)
HEADERS = ("练习题：", "考题：", "小测验：", "试题：", "")
ANSWERS = ("答案：{a}", "正确答案是{a}。", "答案是{a}。")
LETTER_ANSWERS = (*ANSWERS, "应该选{a}。")
QA_FORMS = ("问：{q}答：{a}。", "问：{q}\u3000答：{a}。", "{q}回答：{a}。")
QA_SHARE = 0.3  # share of knowledge multiple-choice drafts written as question-and-answer


def _one_line(text: str) -> str:
    return " ".join(part for part in text.split("\n") if part)


def practice_doc(draft: Draft, rng: random.Random, knowledge: bool) -> str:
    """One practice document (a single line) for ``draft``."""
    context = " ".join(draft.turns)
    context = context + " " if context else ""
    if draft.kind == MC and knowledge and rng.random() < QA_SHARE:
        return rng.choice(QA_FORMS).format(q=_one_line(draft.question), a=draft.options[0])
    header = rng.choice(HEADERS)
    if draft.kind == MC:
        question, letter = render_mc(draft, rng.randrange(len(draft.options)))
        answer = rng.choice(LETTER_ANSWERS).format(a=letter)
        return f"{header}{_one_line(context + question)} {answer}"
    if draft.kind in (TF, CLOZE):
        answer = rng.choice(ANSWERS).format(a=draft.gold)
        return f"{header}{_one_line(context + draft.question)} {answer}"
    raise ValueError(f"no practice form for answer kind {draft.kind!r}")


def practice_documents(
    world: World, train_facts: dict[str, list[Fact]], held_out_stems: set, seed: int, n_chars: int
) -> list[str]:
    """Practice documents holding about ``n_chars`` characters, in the makers' shares.

    ``train_facts`` is the train split of every fact group; ``held_out_stems`` are the
    stems of every valid/test draft (a practice draft with one of them is redrawn).
    """
    rng = random.Random(f"micro-practice:{seed}")
    docs: list[str] = []
    total = sum(share for _, share, _ in PRACTICE_MAKERS)
    for make, share, knowledge in PRACTICE_MAKERS:
        ctx = ItemContext(world, rng, train_facts, "train")
        budget, used = n_chars * share // total, 0
        while used < budget:
            draft = make(ctx)
            if draft.stem in held_out_stems:
                continue
            doc = practice_doc(draft, rng, knowledge)
            docs.append(doc)
            used += len(doc)
    rng.shuffle(docs)
    return docs
