"""Knowledge-recall abilities of the SYNTHETIC micro corpus: biology, history, chinese.

They ask about facts that only the pretraining prose states; ``ItemContext.fact``
hands out the facts of one split, so a test question never asks a train fact.
chinese also asks cloze items on the dynasty facts history asks (transference).
"""

from __future__ import annotations

from doit.data.kinds import CLOZE, MC, TF
from doit.data.micro.drafts import Draft, ItemContext, fact_fields, fact_mc, weighted_choice
from doit.data.micro.world import Fact

TF_WRAPPERS = (
    ("判断下面的说法是否正确：\n{s}", "正确", "错误"),
    ("下面这句话对吗？\n{s}", "对", "错"),
)


def reverse_mc(ctx: ItemContext, fact: Fact, template: str) -> Draft:
    """A question naming the value and asking which entity has it."""
    group = ctx.world.entities[fact.group]
    wrong = ctx.others([e["name"] for e in group], fact.subject, 3)
    question = template.format(value=fact.value)
    return Draft(MC, question, (fact.subject, *wrong), **fact_fields(fact, "reverse"))


def fact_tf(ctx: ItemContext, fact: Fact, statements: dict[str, str]) -> Draft:
    """A true/false statement on ``fact``; false ones swap in another value of the domain."""
    truth = ctx.rng.random() < 0.5
    value = (
        fact.value
        if truth
        else ctx.others(ctx.world.domain(fact.group, fact.attr), fact.value, 1)[0]
    )
    wrapper, yes, no = ctx.rng.choice(TF_WRAPPERS)
    question = wrapper.format(s=statements[fact.attr].format(name=fact.subject, v=value))
    return Draft(TF, question, gold=yes if truth else no, **fact_fields(fact, "tf"))


def cloze(question: str, answer: str, fact: Fact, form: str = "cloze") -> Draft:
    return Draft(CLOZE, question, gold=answer, **fact_fields(fact, form))


# --- biology ---------------------------------------------------------------------
BIOLOGY_Q = {
    "cls": ("{name}属于哪一类动物？", "按照类别来分，{name}是哪一种动物？"),
    "colour": ("{name}是什么颜色的？", "下列哪一项是{name}的颜色？"),
    "habitat": ("{name}通常在哪里生活？", "野外的{name}多见于哪种地方？"),
    "food": ("{name}主要吃什么？", "{name}靠什么填饱肚子？"),
    "lifespan": ("{name}一般能活多少年？", "{name}的寿命大约是多少年？"),
}


def biology(ctx: ItemContext) -> Draft:
    return fact_mc(ctx, ctx.fact("species"), BIOLOGY_Q)


# --- history -----------------------------------------------------------------------
HISTORY_Q = {
    "founder": ("{name}的开国君主是谁？", "是谁开创了{name}？"),
    "capital": ("{name}的都城是哪座城？", "{name}时期，都城设在哪里？"),
    "start": ("{name}建立于哪一年？", "{name}是哪一年建立的？"),
    "years": ("{name}一共延续了多少年？", "{name}总共存在了多少年？"),
    "next": ("紧接在{name}之后的是哪个朝代？", "{name}结束后，哪个朝代接替了它？"),
    "dynasty": ("{name}是哪个朝代的人？", "{name}生活在哪个朝代？"),
    "hometown": ("{name}的家乡是哪里？", "{name}出生在哪座城？"),
    "invention": ("{name}发明了什么？", "下列哪一样东西是{name}发明的？"),
}
HISTORY_TF = {
    "founder": "{name}的开国君主是{v}。",
    "capital": "{name}的都城是{v}。",
    "start": "{name}建立于{v}年。",
    "years": "{name}一共延续了{v}年。",
    "next": "紧接在{name}之后的是{v}。",
    "dynasty": "{name}是{v}人。",
    "hometown": "{name}的家乡是{v}。",
    "invention": "{v}是由{name}发明的。",
}


def history(ctx: ItemContext) -> Draft:
    fact = ctx.fact("dynasty" if ctx.rng.random() < 0.5 else "figure")
    if ctx.rng.random() < 0.4:
        return fact_tf(ctx, fact, HISTORY_TF)
    return fact_mc(ctx, fact, HISTORY_Q)


# --- chinese -------------------------------------------------------------------------
SHARED_DYNASTY_ATTRS = ("founder", "capital", "next")  # the dynasty facts chinese asks too
CLOZE_PREFIXES = ("填空：", "补全句子：", "请填空：")
CHINESE_DYNASTY_SENTENCES = {
    "founder": ("{name}的开国君主是____。", "{name}是由____建立的。", "建立{name}的人叫____。"),
    "capital": ("{name}的都城是____。", "{name}的都城设在____。", "当年{name}以____为都城。"),
    "next": (
        "紧接在{name}之后的是____。",
        "{name}结束后，接替它的是____。",
        "继{name}之后兴起的是____。",
    ),
}
IDIOM_CLOZE = ("请补全成语：{text}", "填空：成语“{text}”", "补全下面的成语：{text}")
POET_CLOZE = {
    "dynasty": ("填空：诗人{name}是____的诗人。", "补全句子：{name}生活的朝代是____。"),
    "title": ("填空：《{value}》的作者是____。", "补全句子：写《{value}》的诗人叫____。"),
}


def _idiom_item(ctx: ItemContext) -> Draft:
    fact = ctx.fact("idiom")
    idiom, form = fact.subject, ctx.rng.randrange(4)  # two multiple-choice forms, two clozes
    if form == 0:
        return reverse_mc(ctx, fact, "下列成语中，哪一个{value}？")
    if form == 1:
        meanings = ctx.others(ctx.world.domain("idiom", "meaning"), fact.value, 3)
        question = f"成语“{idiom}”是什么意思？"
        return Draft(MC, question, (fact.value, *meanings), **fact_fields(fact, "mc"))
    template = ctx.rng.choice(IDIOM_CLOZE)
    if form == 2:
        return cloze(template.format(text=idiom[:2] + "____"), idiom[2:], fact, "cloze_tail")
    return cloze(template.format(text="____" + idiom[2:]), idiom[:2], fact, "cloze_head")


def _poet_item(ctx: ItemContext) -> Draft:
    fact = ctx.fact("poet")
    template = ctx.rng.choice(POET_CLOZE[fact.attr]).format(name=fact.subject, value=fact.value)
    if fact.attr == "dynasty":
        if ctx.rng.random() < 0.5:
            return fact_mc(ctx, fact, {"dynasty": ("诗人{name}是哪个朝代的人？",)})
        return cloze(template, fact.value, fact)
    if ctx.rng.random() < 0.5:
        return reverse_mc(ctx, fact, "《{value}》是哪位诗人写的？")
    return cloze(template, fact.subject, fact)


def _dynasty_item(ctx: ItemContext) -> Draft:
    """A sentence with a blank on a dynasty fact history also asks: cloze, or pick the filler."""
    fact = ctx.fact("dynasty", SHARED_DYNASTY_ATTRS)
    sentence = ctx.rng.choice(CHINESE_DYNASTY_SENTENCES[fact.attr]).format(name=fact.subject)
    if ctx.rng.random() < 0.5:
        return cloze(ctx.rng.choice(CLOZE_PREFIXES) + sentence, fact.value, fact)
    wrong = ctx.others(ctx.world.domain(fact.group, fact.attr), fact.value, 3)
    question = "选出能填入横线的一项：" + sentence
    return Draft(MC, question, (fact.value, *wrong), **fact_fields(fact, "fill"))


CHINESE_ITEMS = ((_dynasty_item, 35), (_idiom_item, 40), (_poet_item, 25))  # (maker, weight %)


def chinese(ctx: ItemContext) -> Draft:
    return weighted_choice(ctx.rng, CHINESE_ITEMS)(ctx)
