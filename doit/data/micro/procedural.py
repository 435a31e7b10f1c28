"""Procedural abilities of the SYNTHETIC micro corpus: math and code.

math chains 1-3 small arithmetic steps (mostly one or two; operands up to 5, doubling,
halving) with a worked solution ending in ``\\boxed{}``: slow growth a micro base can show;
code maps a described computation of 1-3 operations to a one-line Python function
(the fine distractor flips one operator, the coarse one is an unrelated program).
"""

from __future__ import annotations

from doit.data.kinds import MATH, OPEN
from doit.data.micro.drafts import Draft, ItemContext, weighted_choice
from doit.data.micro.phrases import MATH_THINGS

# --- math ------------------------------------------------------------------------------------
NUMERALS = "一二三四五六"
MATH_STEPS = ((1, 5), (2, 4), (3, 1))  # (steps, weight): mostly one or two
MAX_OPERAND, MAX_DOUBLED = 5, 12  # added/subtracted numbers; the largest value doubled


def _math_step(ctx: ItemContext, value: int) -> tuple[str, str, int, str]:
    """One transform of ``value``: (phrase relative to the previous, worked expression, result,
    the operation's name)."""
    options = ["add"]
    if value > 2:
        options.append("sub")
    if value <= MAX_DOUBLED:
        options.append("mul")
    if value % 2 == 0 and value >= 4:
        options.append("half")
    op = ctx.rng.choice(options)
    if op == "add":
        b = ctx.rng.randint(1, MAX_OPERAND)
        return f"多{b}", f"{value}+{b}={value + b}", value + b, op
    if op == "sub":
        b = ctx.rng.randint(1, min(MAX_OPERAND, value - 1))
        return f"少{b}", f"{value}-{b}={value - b}", value - b, op
    if op == "mul":
        return "的2倍", f"{value}×2={value * 2}", value * 2, op
    return "的一半", f"{value}÷2={value // 2}", value // 2, op


def _math_relations(ctx: ItemContext, start: int, steps: int) -> list[tuple[str, str, int, str]]:
    relations, value = [], start
    for _ in range(steps):
        phrase, work, value, op = _math_step(ctx, value)
        relations.append((phrase, work, value, op))
    return relations


def _relation_text(prev: str, cur: str, phrase: str, unit: str) -> str:
    if phrase.startswith("的"):
        return f"{cur}是{prev}{phrase}。"
    return f"{cur}比{prev}{phrase}{unit}。"


def math(ctx: ItemContext) -> Draft:
    verb, unit, obj = ctx.rng.choice(MATH_THINGS)
    steps, start = weighted_choice(ctx.rng, MATH_STEPS), ctx.rng.randint(2, MAX_DOUBLED)
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
        rules=tuple(sorted({(r[3],) for r in relations})),
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
        rules=tuple(sorted({(op,) for op, _ in ops})),
    )
