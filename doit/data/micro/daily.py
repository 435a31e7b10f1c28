"""Everyday prose of the SYNTHETIC micro world: the words the items and the chat use.

A base model has seen every character its fine-tuning data uses; so must ours, and
so must the tokenizer, or those characters would fall back to three byte tokens
each. These narrative documents (market days, visits, school, scenery, tastes,
greetings) carry the question words, exam words and everyday nouns of the items in
plain storytelling, never as a question followed by options and an answer.
``tests/data/micro/test_build.py`` checks that every character of every record appears in
the pretraining text.
"""

from __future__ import annotations

import random

from doit.data.micro.phrases import (
    BAD_DEEDS,
    CHANGE_REASONS,
    ETHICS_PLACES,
    GENERAL_CHAT,
    GENERIC_TOPICS,
    GOODS,
    JOBS,
    LIKES,
    MATH_THINGS,
    POEM_IMAGES,
    PREFERENCES,
    RELATIVES,
    REPAIRS,
    WISHES,
)
from doit.data.micro.world import World

SMALL_TALK = (
    "{a}问{b}：“你吃饭了吗？”{b}笑着说：“吃过了！”",
    "{a}问：“今天天气怎么样？”{b}说：“很好，我们一起出去走走吧！”",
    "{a}对{b}说：“有机会的话，我陪你去{town}看看。”",
    "{a}最近很忙，事情一多就乱，累了就歇一歇，陪家人聊聊天。",
    "出门以前，{a}总会先排好行程，想好是搭船还是走路。",
    "沿着{river}一直走，傍晚就能到{town}。",
    "遇到不懂的事，{a}就去问先生，先生总能讲解明白。",
    "{a}给{b}介绍了{dynasty}的历史，{b}听得很认真。",
    "过生日的时候，朋友们互相祝福，说些{wish}、{wish2}之类的话，大家都很快乐。",
    "{a}一直想交几个好朋友，如果有人需要帮忙，{a}总是第一个站出来。",
    "{a}常说：“{advice}”",
    "{a}希望明天是个好天气，这样才能去{town}吃一顿好饭。",
)
ERRANDS = (
    "{a}一早去{town}的集市，买了{n}斤{good}和一些{good2}。卖{good}的人说，今天的{good}比平时便宜。",
    "{a}问{b}明天去哪儿，{b}说要去{town}看{relative}，下午{h}点就走。",
    "{a}家的{thing}坏了，是{c}帮忙修好的，{b}只在一旁看着。后来有人问起是谁修的，{a}总说是{c}。",
    "{b}本来打算去{town}，后来改去了{town2}，因为{reason}",
    "{a}本来想买{good}，可{good}卖完了，只好买了{good2}。",
    "{a}在信里写道：“我今天去了{town}，然后去了{town2}，晚上才回家。”",
    "{a}指着一只{species}问{b}那是什么动物，{b}说那是{species}，按照类别属于{cls}类。",
    "戏台上，{a}扮演{town}的{job}，演得和真的一样，现在大家都叫他{job}{a}。",
    "{a}的车票丢了，{b}把自己的票给了{a}。",
)
SCHOOL = (
    "{school}的先生常给学生出题，一共有三种：选择题、填空题和判断题。",
    "选择题会列出几个选项，学生要从中选出恰当的一项；有的题可以多选，题后会写明（可多选）。",
    "填空题要在横线上补全句子，判断题要说出一句话是对还是错，也就是正确还是错误，是否有误。",
    "答对了，先生说正确；答错了，先生就指出错误，再讲一遍答案。",
    "先生说，一个朝代结束以后，紧接着兴起的是下一个朝代，这些都要记清楚。",
    "{a}总是说，等到假期，就回乡下继续读书，设法把先生教的都学会。",
    "野外的动物一般靠吃东西填饱肚子，颜色各不相同。",
    "在{school}读书时，{a}学会了怎样用Python实现一个函数：输入一个数，返回计算的结果。",
    "有人生病了，{school}的学生会去问大夫，哪种病症该怎样治疗。",
)
SCENERY = (
    "{town}的傍晚很安静，炊烟飘过屋顶，{topic}{img}，{topic2}{img2}。",
    "{a}很想念故乡：村口的{topic}{img}，夜里躲在床上也能听着钟声入睡。",
    "雨后的{town}，{topic}{img}，天边的晚霞慢慢藏进了云里。",
)
MANNERS = (
    "在{place}，{bad}很不恰当，也不妥当；什么样的做法才算合适，这些事各地看法不一。",
    "如果{a}去{town}，就会买{good}。这一次{a}没有买{good}，可见{a}没有去{town}。",
    "凡是{town}的人，都会{like}。{a}是{town}人，所以{a}也会{like}，这是推出来的结论。",
)


def _tastes(rng: random.Random) -> str:
    parts = []
    for _ask, pool, answer in rng.sample(PREFERENCES, 3):
        first, second = rng.sample(pool, 2)
        parts.append(f"有人说：“{answer.format(v=first)}。”也有人说：“{answer.format(v=second)}。”")
    return "".join(parts) + "说到季节和喜好，每个人都不一样，一直都是这样。"


def _math_story(world: World, rng: random.Random) -> str:
    verb, unit, obj = rng.choice(MATH_THINGS)
    a, b = rng.sample(world.people, 2)
    x, k = rng.randint(2, 30), rng.randint(2, 3)
    day = "一二三四五六"[rng.randrange(1, 6)]
    return (
        f"{a}第{day}天{verb}了{2 * x}{unit}{obj}，{b}{verb}的是{a}的{k}倍，"
        f"也就是{2 * x}×{k}={2 * x * k}{unit}；另一半{x}{unit}，正好是{2 * x}÷2={x}。"
    )


def _fill(template: str, world: World, rng: random.Random) -> str:
    ents = world.entities
    a, b, c = rng.sample(world.people, 3)
    town, town2 = rng.sample([t["name"] for t in ents["town"]], 2)
    good, good2 = rng.sample(GOODS, 2)
    species = rng.choice(ents["species"])
    topic, topic2 = rng.sample(GENERIC_TOPICS, 2)
    img, img2 = rng.sample(POEM_IMAGES, 2)
    wish, wish2 = rng.sample(WISHES, 2)
    job = rng.choice(JOBS)[0]
    return template.format(
        a=a,
        b=b,
        c=c,
        town=town,
        town2=town2,
        good=good,
        good2=good2,
        n=rng.randint(1, 9),
        relative=rng.choice(RELATIVES),
        h=rng.randint(1, 6),
        thing=rng.choice(REPAIRS),
        reason=rng.choice(CHANGE_REASONS),
        species=species["name"],
        cls=species["cls"],
        job=job,
        school=rng.choice(ents["school"])["name"],
        topic=topic,
        topic2=topic2,
        img=img,
        img2=img2,
        river=rng.choice(world.rivers),
        dynasty=rng.choice(ents["dynasty"])["name"],
        wish=wish,
        wish2=wish2,
        advice=rng.choice(GENERAL_CHAT)[1],
        place=rng.choice(ETHICS_PLACES),
        bad=rng.choice(BAD_DEEDS),
        like=rng.choice(LIKES),
    )


TEMPLATE_FAMILIES = (SMALL_TALK, ERRANDS, SCHOOL, SCENERY, MANNERS)


def daily_doc(world: World, rng: random.Random) -> str:
    """One everyday paragraph: two sentences from the template families, or a story."""
    roll = rng.randrange(len(TEMPLATE_FAMILIES) + 2)
    if roll == len(TEMPLATE_FAMILIES):
        return _tastes(rng)
    if roll == len(TEMPLATE_FAMILIES) + 1:
        return _math_story(world, rng)
    family = TEMPLATE_FAMILIES[roll]
    return "".join(_fill(t, world, rng) for t in rng.sample(family, 2))
