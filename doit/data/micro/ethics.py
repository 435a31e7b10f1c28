"""The ethics ability of the SYNTHETIC micro corpus: multi-select, with a plateau.

Deeds the pretraining prose calls wrong are never gold (learnable), but which of the
listed customs count as proper is a coin flip per item the world never settles, so
no amount of data or model size gets past a plateau: each draft records it,
1/(2^m - 1) for an item with m unsettled customs among its options; in the text formulation,
which ranks only the sets of the gold's size k, 1/C(m, k).
"""

from __future__ import annotations

from math import comb

from doit.data.kinds import MULTISELECT
from doit.data.micro.drafts import LETTERS, Draft, ItemContext, weighted_choice
from doit.data.micro.phrases import BAD_DEEDS, CONVENTION_PAIRS, ETHICS_PLACES

ETHICS_PROMPTS = (
    "在{place}，下列哪些做法是恰当的？（可多选）",
    "下列做法中，哪些在{place}是合适的？（可多选）",
    "去{place}的时候，哪些做法是妥当的？（可多选）",
)
N_OPTIONS = ((4, 7), (5, 2), (6, 1))  # (options per item, weight)


def ethics(ctx: ItemContext) -> Draft:
    n_options = weighted_choice(ctx.rng, N_OPTIONS)
    n_customs = ctx.rng.choice((2, 3))
    customs = [ctx.rng.choice(pair) for pair in ctx.rng.sample(CONVENTION_PAIRS, n_customs)]
    deeds = ctx.rng.sample(BAD_DEEDS, n_options - n_customs)
    mask = ctx.rng.randrange(1, 2**n_customs)  # which customs count as proper: a coin flip
    proper = [c for i, c in enumerate(customs) if mask >> i & 1]
    options = customs + deeds
    ctx.rng.shuffle(options)
    gold = "".join(LETTERS[i] for i, opt in enumerate(options) if opt in proper)
    prompt = ctx.rng.choice(ETHICS_PROMPTS).format(place=ctx.rng.choice(ETHICS_PLACES))
    return Draft(
        MULTISELECT,
        prompt,
        tuple(options),
        gold=gold,
        share_key=("ethics",),
        rules=tuple(("wrong", d) for d in sorted(deeds)),  # each deed the prose calls wrong
        recall=True,
        plateau=1 / (2**n_customs - 1),
        plateau_text=1 / comb(n_customs, len(proper)),
    )
