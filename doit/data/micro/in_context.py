"""In-context and procedural abilities of the SYNTHETIC micro corpus.

understanding and reasoning need nothing beyond the prompt (a short dialogue, or
premises and a rule); both use the rule format ``凡是住在X的人都会Y`` for part of
their items, which is their planted transference. math chains 2-4 arithmetic steps
with a worked solution; code maps a described computation to a one-line function.
"""

from __future__ import annotations

from doit.data.abilities import MATH, MC, OPEN
from doit.data.micro.drafts import Draft, ItemContext
from doit.data.micro.phrases import (
    CHANGE_REASONS,
    COMPARISONS,
    GOODS,
    LIKES,
    MATH_THINGS,
    RELATIVES,
    REPAIRS,
    SKILLS,
)

RULE_FORMAT = ("format", "rule")  # share key of the format reasoning and understanding share


def rule_sentence(town: str, skill: str) -> str:
    return f"凡是住在{town}的人都会{skill}。"


def _town(ctx: ItemContext, k: int = 1) -> list[str]:
    return ctx.rng.sample([t["name"] for t in ctx.world.entities["town"]], k)


# --- understanding ---------------------------------------------------------------------
def _dialogue(ctx, lines, question, options, share_key, steps) -> Draft:
    options = tuple(options[: ctx.rng.choice((3, 4))])  # gold first; 3 or 4 options
    if len(lines) % 2:  # an odd last line opens the final user message
        lines, question = lines[:-1], lines[-1] + "\n" + question
    return Draft(MC, question, options, turns=tuple(lines), share_key=share_key, steps=steps)


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
        return _dialogue(ctx, lines, f"{b}几点走？", times, ("understanding", "plan"), 1)
    return _dialogue(ctx, lines, f"{b}明天去哪里？", towns, ("understanding", "plan"), 1)


def _dialogue_change(ctx: ItemContext) -> Draft:
    a, b = ctx.rng.sample(ctx.world.people, 2)
    reason = ctx.rng.choice(CHANGE_REASONS)
    if ctx.rng.random() < 0.5:
        towns = _town(ctx, 4)
        lines = [f"{a}：你要去{towns[1]}吗？", f"{b}：本来要去，后来改去{towns[0]}了。"]
        question, options = f"{b}最后去哪里？", towns
    else:
        goods = ctx.rng.sample(GOODS, 4)
        lines = [f"{a}：你不是要买{goods[1]}吗？", f"{b}：{goods[1]}卖完了，我买了{goods[0]}。"]
        question, options = f"{b}最后买了什么？", goods
    lines += [f"{a}：为什么？", f"{b}：{reason}"][: ctx.rng.choice((0, 1, 2))]
    return _dialogue(ctx, lines, question, options, ("understanding", "change"), 2)


def _dialogue_who(ctx: ItemContext) -> Draft:
    a, b, c, d, e = ctx.rng.sample(ctx.world.people, 5)
    thing = ctx.rng.choice(REPAIRS)
    lines = [f"{a}：谁帮你修的{thing}？", f"{b}：是{c}，{d}只是看着。"]
    return _dialogue(ctx, lines, f"是谁修好了{thing}？", [c, d, a, e], ("understanding", "who"), 1)


def _dialogue_rule(ctx: ItemContext) -> Draft:
    a, b, c = ctx.rng.sample(ctx.world.people, 3)
    town, skills = _town(ctx)[0], ctx.rng.sample(SKILLS, 4)
    lines = [f"{a}：{rule_sentence(town, skills[0])}", f"{b}：{c}就住在{town}。"]
    lines += [f"{a}：那{c}也一样。"][: ctx.rng.choice((0, 1))]
    return _dialogue(ctx, lines, f"{c}会做什么？", skills, RULE_FORMAT, 2)


def understanding(ctx: ItemContext) -> Draft:
    roll = ctx.rng.random()
    if roll < 0.3:
        return _dialogue_rule(ctx)
    if roll < 0.55:
        return _dialogue_plan(ctx)
    if roll < 0.8:
        return _dialogue_change(ctx)
    return _dialogue_who(ctx)


# --- reasoning --------------------------------------------------------------------------
ASKS = ("由此可以推出：", "哪一项一定为真？", "可以得出哪个结论？")


def _puzzle(ctx, premises: str, options, share_key, steps, ask: str = "") -> Draft:
    question = premises + "\n" + (ask or ctx.rng.choice(ASKS))
    return Draft(MC, question, tuple(options), share_key=share_key, steps=steps)


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
        ask, options = f"谁{most}？", [a, b, c, d]
    else:
        ask, options = f"谁{least}？", [c, b, a, d]
    return _puzzle(ctx, "".join(facts), options, ("reasoning", "order"), 2, ask)


def _contrapositive_puzzle(ctx: ItemContext) -> Draft:
    x, y = ctx.rng.sample(ctx.world.people, 2)
    town, good = _town(ctx)[0], ctx.rng.choice(GOODS)
    premises = f"如果{x}去{town}，{x}就会买{good}。这一次{x}没有买{good}。"
    options = [f"{x}没有去{town}", f"{x}去了{town}", f"{x}买了{good}", f"{y}没有去{town}"]
    return _puzzle(ctx, premises, options, ("reasoning", "contrapositive"), 2)


def reasoning(ctx: ItemContext) -> Draft:
    roll = ctx.rng.random()
    if roll < 0.35:
        return _rule_puzzle(ctx)
    if roll < 0.6:
        return _chain_puzzle(ctx)
    if roll < 0.8:
        return _order_puzzle(ctx)
    return _contrapositive_puzzle(ctx)


# --- math ------------------------------------------------------------------------------------
NUMERALS = "一二三四五六"


def _math_step(ctx: ItemContext, value: int) -> tuple[str, str, int]:
    """One transform of ``value``: (phrase relative to the previous, worked expression, result)."""
    options = ["add"]
    if value > 2:
        options.append("sub")
    if value * 2 <= 200:
        options.append("mul")
    if value % 2 == 0 and value >= 4:
        options.append("half")
    op = ctx.rng.choice(options)
    if op == "add":
        b = ctx.rng.randint(1, 15)
        return f"多{b}", f"{value}+{b}={value + b}", value + b
    if op == "sub":
        b = ctx.rng.randint(1, min(15, value - 1))
        return f"少{b}", f"{value}-{b}={value - b}", value - b
    if op == "mul":
        k = ctx.rng.randint(2, 3) if value * 3 <= 200 else 2
        return f"的{k}倍", f"{value}×{k}={value * k}", value * k
    return "的一半", f"{value}÷2={value // 2}", value // 2


def _math_relations(ctx: ItemContext, start: int, steps: int) -> list[tuple[str, str, int]]:
    relations, value = [], start
    for _ in range(steps):
        phrase, work, value = _math_step(ctx, value)
        relations.append((phrase, work, value))
    return relations


def _relation_text(prev: str, cur: str, phrase: str, unit: str) -> str:
    if phrase.startswith("的"):
        return f"{cur}是{prev}{phrase}。"
    return f"{cur}比{prev}{phrase}{unit}。"


def math(ctx: ItemContext) -> Draft:
    verb, unit, obj = ctx.rng.choice(MATH_THINGS)
    steps, start = ctx.rng.randint(2, 4), ctx.rng.randint(2, 30)
    relations = _math_relations(ctx, start, steps)
    if ctx.rng.random() < 0.5:
        person = ctx.rng.choice(ctx.world.people)
        names = [f"第{NUMERALS[i]}天" for i in range(steps + 1)]
        intro = f"{person}第一天{verb}了{start}{unit}{obj}。"
        ask = f"{person}{names[-1]}{verb}了多少{unit}{obj}？"
    else:
        names = ctx.rng.sample(ctx.world.people, steps + 1)
        intro = f"{names[0]}{verb}了{start}{unit}{obj}。"
        ask = f"{names[-1]}{verb}了多少{unit}{obj}？"
    body = [_relation_text(names[i], names[i + 1], r[0], unit) for i, r in enumerate(relations)]
    work = [f"{names[i + 1]}：{r[1]}{unit}。" for i, r in enumerate(relations)]
    answer = str(relations[-1][2])
    solution = "\n".join([*work, f"答案是\\boxed{{{answer}}}"])
    return Draft(
        MATH,
        intro + "".join(body) + ask,
        gold=solution,
        answer=answer,
        share_key=("math", "chain"),
        steps=steps,
    )


# --- code ------------------------------------------------------------------------------------
CODE_OPS = {"+": "加上{c}", "-": "减去{c}", "*": "乘以{c}"}
FLIPPED = {"+": "-", "-": "+", "*": "+"}
CODE_PROMPTS = (
    "写一个Python函数{fn}({v})，把{v}{desc}，返回结果。",
    "请用Python实现函数{fn}({v})：输入{v}，{desc}，再把结果返回。",
    "用Python写函数{fn}({v})，它返回{v}{desc}以后得到的数。",
)
COARSE_PROGRAMS = (
    "def {fn}({v}): print({v})",
    "def {fn}({v}): pass",
    "def {fn}({v}): return str({v})[::-1]",
    'print("{fn}")',
    "for {v} in range(3): print({v})",
    "我不会写这个函数。",
)


def random_ops(rng) -> list[tuple[str, int]]:
    """1-3 (operator, constant) steps; no multiplication by 1."""
    ops = [(rng.choice("+-*"), rng.randint(1, 9)) for _ in range(rng.randint(1, 3))]
    return [(op, 2 if op == "*" and c == 1 else c) for op, c in ops]


def program(fn: str, var: str, ops: list[tuple[str, int]], flip_at: int = -1) -> str:
    """One-line function applying ``ops`` in order; ``flip_at`` flips that step's operator."""
    expr = var
    for i, (op, c) in enumerate(ops):
        if op == "*" and ("+" in expr or "-" in expr):
            expr = f"({expr})"
        expr = f"{expr}{FLIPPED[op] if i == flip_at else op}{c}"
    return f"def {fn}({var}): return {expr}"


def describe(ops: list[tuple[str, int]]) -> str:
    words = [CODE_OPS[op].format(c=c) for op, c in ops]
    if len(words) == 1:
        return words[0]
    joined = [f"先{words[0]}", *[f"再{w}" for w in words[1:-1]], f"最后{words[-1]}"]
    return "，".join(joined) if len(words) > 2 else f"先{words[0]}，再{words[1]}"


def code(ctx: ItemContext) -> Draft:
    fn, var = ctx.rng.choice("fgh"), ctx.rng.choice("xna")
    ops = random_ops(ctx.rng)
    prompt = ctx.rng.choice(CODE_PROMPTS).format(fn=fn, v=var, desc=describe(ops))
    gold = program(fn, var, ops)
    fine = program(fn, var, ops, flip_at=ctx.rng.randrange(len(ops)))
    coarse = ctx.rng.choice(COARSE_PROGRAMS).format(fn=fn, v=var)
    return Draft(
        OPEN,
        prompt,
        gold=gold,
        choices=(gold, fine, coarse),
        share_key=("code", "expression"),
        steps=len(ops),
    )
