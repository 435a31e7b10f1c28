"""The C-Eval-style out-of-domain 5-shot sets of the SYNTHETIC micro corpus.

They ask about herbs (physician), academies (teacher qualification) and town
layouts (urban and rural planner): facts the pretraining prose states but no
in-domain ability asks about. Questions are short and option lines compact (``A.text``), so
that a whole 5-shot prompt fits the micro bases' 256 positions with room for the answer
(at most 240 tokens in the doit chat format; a test checks it).
"""

from __future__ import annotations

import random

from doit.data import abilities
from doit.data.micro.drafts import ItemContext, fact_mc, render_mc
from doit.data.micro.world import World

N_OOD_QUESTIONS = 40
N_SHOTS = 5
# One (fact group, question templates) per OOD set, in the order of abilities.OOD
# (physician, teacher qualification, urban and rural planner).
OOD_SOURCES = (
    ("herb", {"ailment": ("{name}治哪种病症？",), "part": ("{name}入药用哪个部位？",)}),
    ("school", {"teacher": ("{name}的先生是哪位？",), "subject": ("{name}的学生学什么？",)}),
    ("town", {"river": ("{name}在哪条河边？",), "gates": ("{name}有几座城门？",)}),
)
OPTION_MARK = "."  # A.text: a token less per option than the in-domain "A. text"


def _ood_records(world: World, ability, group: str, templates, rng) -> list[dict]:
    ctx = ItemContext(world, rng, {}, "test")
    facts = sorted(world.facts(group), key=lambda f: f.key)
    rng.shuffle(facts)
    questions, shot_pool = facts[:N_OOD_QUESTIONS], facts[N_OOD_QUESTIONS:]
    positions = [i % 4 for i in range(len(questions))]
    rng.shuffle(positions)
    records = []
    for idx, (fact, pos) in enumerate(zip(questions, positions, strict=True)):
        messages = []
        for shot in rng.sample(shot_pool, N_SHOTS) + [fact]:
            shot_pos = pos if shot is fact else rng.randrange(4)
            user, letter = render_mc(fact_mc(ctx, shot, templates), shot_pos, OPTION_MARK)
            messages += [
                {"role": "user", "content": user},
                {"role": "assistant", "content": letter},
            ]
        records.append(
            {"messages": messages, "idx": idx, "type": ability.type_name, "question_format": 0}
        )
    return records


def ood_sets(world: World, seed: int) -> dict[str, list[dict]]:
    """ability key -> its 40 five-shot records (12 messages each)."""
    out = {}
    for ability, (group, templates) in zip(abilities.OOD, OOD_SOURCES, strict=True):
        rng = random.Random(f"micro-ood:{seed}:{ability.key}")
        out[ability.key] = _ood_records(world, ability, group, templates, rng)
    return out
