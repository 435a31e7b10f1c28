"""In-context abilities of the SYNTHETIC micro corpus: understanding and reasoning.

Both need nothing beyond the prompt (a short dialogue, or premises and a rule);
both use the rule format ``凡是住在X的人都会Y`` for part of their items, which is
their planted transference.
"""

from __future__ import annotations

from doit.data.kinds import MC
from doit.data.micro.drafts import Draft, ItemContext, weighted_choice
from doit.data.micro.phrases import (
    CHANGE_REASONS,
    COMPARISONS,
    GOODS,
    LIKES,
    RELATIVES,
    REPAIRS,
    SKILLS,
)

RULE_FORMAT = ("format", "rule")  # share key of the format reasoning and understanding share
PLAN = ("understanding", "plan")


def rule_sentence(town: str, skill: str) -> str:
    return f"凡是住在{town}的人都会{skill}。"


def _town(ctx: ItemContext, k: int = 1) -> list[str]:
    return ctx.rng.sample([t["name"] for t in ctx.world.entities["town"]], k)


# --- understanding ---------------------------------------------------------------------
def _dialogue(ctx, lines, question, options, share_key, steps, rule: tuple) -> Draft:
    """A dialogue item; ``rule``: what the answer reads off the dialogue (Draft.rules)."""
    options = tuple(options[: ctx.rng.choice((3, 4))])  # gold first; 3 or 4 options
    if len(lines) % 2:  # an odd last line opens the final user message
        lines, question = lines[:-1], lines[-1] + "\n" + question
    turns = tuple(lines)
    return Draft(
        MC, question, options, turns=turns, share_key=share_key, steps=steps, rules=(rule,)
    )


def _times(ctx: ItemContext, k: int) -> list[str]:
    pool = [f"早上{h}点" for h in range(5, 12)] + [f"下午{h}点" for h in range(1, 7)]
    return ctx.rng.sample(pool, k)


def _dialogue_plan(ctx: ItemContext) -> Draft:
    a, b = ctx.rng.sample(ctx.world.people, 2)
    towns, times = _town(ctx, 4), _times(ctx, 4)
    errand = ctx.rng.choice((f"买{ctx.rng.choice(GOODS)}", f"看{ctx.rng.choice(RELATIVES)}"))
    lines = [f"{a}：你明天去哪儿？", f"{b}：去{towns[0]}{errand}。"]
    lines += [f"{a}：几点走？", f"{b}：{times[0]}。"][: ctx.rng.choice((0, 1, 2))]
    if len(lines) > 3 and ctx.rng.random() < 0.5:
        return _dialogue(ctx, lines, f"{b}几点走？", times, PLAN, 1, ("plan", "time"))
    return _dialogue(ctx, lines, f"{b}明天去哪里？", towns, PLAN, 1, ("plan", "place"))


def _dialogue_change(ctx: ItemContext) -> Draft:
    a, b = ctx.rng.sample(ctx.world.people, 2)
    reason = ctx.rng.choice(CHANGE_REASONS)
    if ctx.rng.random() < 0.5:
        towns = _town(ctx, 4)
        lines = [f"{a}：你要去{towns[1]}吗？", f"{b}：本来要去，后来改去{towns[0]}了。"]
        question, options, rule = f"{b}最后去哪里？", towns, ("change", "place")
    else:
        goods = ctx.rng.sample(GOODS, 4)
        lines = [f"{a}：你不是要买{goods[1]}吗？", f"{b}：{goods[1]}卖完了，我买了{goods[0]}。"]
        question, options, rule = f"{b}最后买了什么？", goods, ("change", "goods")
    lines += [f"{a}：为什么？", f"{b}：{reason}"][: ctx.rng.choice((0, 1, 2))]
    return _dialogue(ctx, lines, question, options, ("understanding", "change"), 2, rule)


def _dialogue_who(ctx: ItemContext) -> Draft:
    a, b, c, d, e = ctx.rng.sample(ctx.world.people, 5)
    thing = ctx.rng.choice(REPAIRS)
    lines = [f"{a}：谁帮你修的{thing}？", f"{b}：是{c}，{d}只是看着。"]
    options = [c, d, a, e]
    return _dialogue(
        ctx, lines, f"是谁修好了{thing}？", options, ("understanding", "who"), 1, ("who",)
    )


def _dialogue_rule(ctx: ItemContext) -> Draft:
    a, b, c = ctx.rng.sample(ctx.world.people, 3)
    town, skills = _town(ctx)[0], ctx.rng.sample(SKILLS, 4)
    lines = [f"{a}：{rule_sentence(town, skills[0])}", f"{b}：{c}就住在{town}。"]
    lines += [f"{a}：那{c}也一样。"][: ctx.rng.choice((0, 1))]
    return _dialogue(ctx, lines, f"{c}会做什么？", skills, RULE_FORMAT, 2, ("rule",))


DIALOGUES = (
    (_dialogue_rule, 30),
    (_dialogue_plan, 25),
    (_dialogue_change, 25),
    (_dialogue_who, 20),
)


def understanding(ctx: ItemContext) -> Draft:
    return weighted_choice(ctx.rng, DIALOGUES)(ctx)


# --- reasoning --------------------------------------------------------------------------
ASKS = ("由此可以推出：", "哪一项一定为真？", "可以得出哪个结论？")


def _puzzle(ctx, premises: str, options, share_key, steps, ask: str = "", rule=()) -> Draft:
    """A puzzle item; its rule (Draft.rules): ``rule``, else its share key's kind."""
    question = premises + "\n" + (ask or ctx.rng.choice(ASKS))
    rule, options = rule or (share_key[-1],), tuple(options)
    return Draft(MC, question, options, share_key=share_key, steps=steps, rules=(rule,))


def _rule_puzzle(ctx: ItemContext) -> Draft:
    x, y = ctx.rng.sample(ctx.world.people, 2)
    town, (s1, s2) = _town(ctx)[0], ctx.rng.sample(SKILLS, 2)
    premises = rule_sentence(town, s1) + f"{x}住在{town}。"
    options = [f"{x}会{s1}", f"{x}不会{s1}", f"{y}会{s1}", f"{x}会{s2}"]
    return _puzzle(ctx, premises, options, RULE_FORMAT, 1)


def _chain_puzzle(ctx: ItemContext) -> Draft:
    x, y = ctx.rng.sample(ctx.world.people, 2)
    town, skill, like = _town(ctx)[0], ctx.rng.choice(SKILLS), ctx.rng.choice(LIKES)
    premises = rule_sentence(town, skill) + f"凡是会{skill}的人都喜欢{like}。{x}住在{town}。"
    options = [f"{x}喜欢{like}", f"{x}不喜欢{like}", f"{x}不会{skill}", f"{y}喜欢{like}"]
    return _puzzle(ctx, premises, options, ("reasoning", "chain"), 2)


def _order_puzzle(ctx: ItemContext) -> Draft:
    a, b, c, d = ctx.rng.sample(ctx.world.people, 4)
    more, most, least = ctx.rng.choice(COMPARISONS)
    facts = [f"{a}比{b}{more}。", f"{b}比{c}{more}。"]
    ctx.rng.shuffle(facts)
    if ctx.rng.random() < 0.5:
        ask, options, rule = f"谁{most}？", [a, b, c, d], ("order", "most")
    else:
        ask, options, rule = f"谁{least}？", [c, b, a, d], ("order", "least")
    return _puzzle(ctx, "".join(facts), options, ("reasoning", "order"), 2, ask, rule)


def _contrapositive_puzzle(ctx: ItemContext) -> Draft:
    x, y = ctx.rng.sample(ctx.world.people, 2)
    town, good = _town(ctx)[0], ctx.rng.choice(GOODS)
    premises = f"如果{x}去{town}，{x}就会买{good}。这一次{x}没有买{good}。"
    options = [f"{x}没有去{town}", f"{x}去了{town}", f"{x}买了{good}", f"{y}没有去{town}"]
    return _puzzle(ctx, premises, options, ("reasoning", "contrapositive"), 2)


PUZZLES = (
    (_rule_puzzle, 35),
    (_chain_puzzle, 25),
    (_order_puzzle, 20),
    (_contrapositive_puzzle, 20),
)


def reasoning(ctx: ItemContext) -> Draft:
    return weighted_choice(ctx.rng, PUZZLES)(ctx)
