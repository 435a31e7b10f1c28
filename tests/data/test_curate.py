"""Corpus curation: normalisation, exact/near dedup, length filter, contamination, report."""

import functools
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doit.data import abilities as ab
from doit.data.curate import (
    CONTAMINATED_EXACT,
    CONTAMINATED_NEAR,
    EXACT_DUPLICATE,
    NEAR_DUPLICATE,
    TOO_LONG,
    TOO_SHORT,
    contamination,
    content_key,
    curate,
    exact_dedup,
    length_filter,
    near_dedup,
    normalize_record,
    normalize_text,
    write_report,
)

ROOT = Path(__file__).resolve().parents[2]
REPLY = "好的，下面是我的回答。"

# 30 topics, two different questions each (40-80 characters): the first of each pair is
# copied with small edits to make true near duplicates; the second is a distinct question
# on the same topic.
TOPIC_PAIRS = [
    (
        "植物细胞与动物细胞在结构上有哪些主要区别？请从细胞壁、叶绿体和液泡三个方面分别加以说明。",
        "线粒体被称为细胞的动力工厂，请解释有氧呼吸的三个阶段分别在细胞的哪个部位进行，各产生多少能量。",
    ),
    (
        "唐朝贞观年间政治清明、经济繁荣，史称贞观之治，请简要分析唐太宗在用人和纳谏方面的做法，并说明这些做法对今天的管理工作有什么启示。",
        "安史之乱是唐朝由盛转衰的转折点，请概述这场叛乱爆发的原因及其对唐朝中后期政局的影响。",
    ),
    (
        "给定一个单链表的头节点，请编写一个函数将链表反转，并返回反转后链表的头节点，要求只使用常数额外空间。",
        "给你两个按升序排列的链表，请将它们合并为一个新的升序链表并返回，新链表由拼接给定两个链表的所有节点组成。",
    ),
    (
        "请以秋天的落叶为主题写一首现代诗，表达对时光流逝的感慨，语言要清新自然，篇幅不超过二十行。",
        "请写一篇关于故乡秋收场景的散文，描写金黄的稻田和忙碌的农民，字数在八百字左右，情感真挚。",
    ),
    (
        "下列句子中加点的成语使用恰当的一项是哪一个？请结合成语的本义和语境进行判断并说明理由。",
        "请解释成语“守株待兔”的出处和含义，并造一个句子，说明它在现代生活中常被用来讽刺什么样的人。",
    ),
    (
        "男：明天的会议改到下午三点了，你通知大家了吗？女：还没有，我马上发邮件告诉他们。问：女的接下来要做什么？",
        "女：这家餐厅的菜味道不错，就是价格有点贵。男：下次我们可以中午来，午餐有优惠。问：男的是什么意思？",
    ),
    (
        "假设你是一家咖啡店的店员，一位顾客说他不喜欢太甜的饮品，请你向他推荐两款合适的咖啡并说明理由。",
        "请你扮演一名图书管理员，有位读者想找关于宋代历史的入门书籍，请与他进行对话并给出具体建议。",
    ),
    (
        "所有的鸟都会飞，企鹅是鸟，所以企鹅会飞。请指出这个推理在前提上存在的问题，并说明为什么结论不成立。",
        "如果今天下雨，那么运动会就会延期；运动会没有延期，由此可以推出什么结论？请说明依据的推理规则。",
    ),
    (
        "一个长方形的长是宽的三倍，周长是四十八厘米，求这个长方形的面积是多少平方厘米？请写出解题步骤，并检验结果是否正确。",
        "小明用五十元买了三本笔记本和两支钢笔，每本笔记本八元，问每支钢笔多少钱？请列出方程并求解。",
    ),
    (
        "在公共场合看到有人随地乱扔垃圾，你认为应该如何劝阻才能既维护公共秩序又不引起对方反感？",
        "朋友请求你在考试中帮他作弊，你会怎样拒绝他，同时又能照顾到你们之间的友谊？请说明你的理由。",
    ),
    (
        "光合作用的光反应和暗反应分别在叶绿体的什么部位进行？两者之间在物质和能量上有什么联系？",
        "影响植物光合作用强度的外界因素主要有哪些？请举例说明在农业生产中如何利用这些因素提高产量。",
    ),
    (
        "孟德尔通过豌豆杂交实验发现了遗传的分离定律，请说明该定律的主要内容以及实验中选用豌豆的原因。",
        "人类红绿色盲是伴X染色体隐性遗传病，为什么男性患者的比例明显高于女性？请用遗传图解加以说明。",
    ),
    (
        "秦始皇统一六国后采取了哪些巩固统一的措施？请从政治、经济和文化三个方面分别举例说明，并评价这些措施对中国历史发展的长远影响。",
        "商鞅变法为秦国的崛起奠定了基础，请概括变法的主要内容，并评价它对后世产生的深远影响。",
    ),
    (
        "鸦片战争后中国逐步沦为半殖民地半封建社会，请结合南京条约的内容说明这一变化是如何发生的。",
        "洋务运动以自强求富为口号，创办了一批近代军事和民用工业，请分析其最终失败的主要原因。",
    ),
    (
        "给定一个整数数组和一个目标值，请在数组中找出和为目标值的两个整数，并返回它们的数组下标。",
        "给你一个整数数组，请找出其中连续子数组的最大和，并分析你所给出算法的时间复杂度和空间复杂度。",
    ),
    (
        "请编写一个函数判断给定的字符串是否为回文串，只考虑字母和数字字符，可以忽略字母的大小写。",
        "给定一个字符串，请找出其中不含有重复字符的最长子串的长度，并说明滑动窗口方法的基本思路。",
    ),
    (
        "请写一个关于小猫第一次离家探险的童话故事，故事要有起因、经过和结果，适合五六岁的孩子阅读。",
        "请创作一个发生在未来城市的科幻短篇，主人公是一名修理机器人的少女，结尾要有出人意料的转折。",
    ),
    (
        "请赏析杜甫《春望》中“感时花溅泪，恨别鸟惊心”两句，说明诗人运用了怎样的表现手法。",
        "李白的《静夜思》语言朴素却流传千古，请从意象和情感两个角度分析这首诗打动人心的原因。",
    ),
    (
        "下列各句中没有语病的一句是哪一项？请逐项分析其他句子存在的搭配不当或成分残缺等问题。",
        "请将下面这段文言文翻译成现代汉语，注意准确理解实词和虚词的含义，并保持原文的语气。",
    ),
    (
        "男：你周末打算去爬山吗？女：本来想去，可是天气预报说会下大雨，只好在家看书了。问：女的周末会做什么？",
        "女：你的论文写得怎么样了？男：资料都找齐了，就差最后一章，这周末应该能完成。问：男的论文还差多少？",
    ),
    (
        "你现在是一位经验丰富的健身教练，请为一名刚开始锻炼、体重偏重的上班族制定一周的训练计划，要求说明每天的运动项目、时长和饮食上需要注意的事项。",
        "请扮演一名导游，向第一次来北京的外国游客介绍故宫的历史和参观路线，语气要热情友好。",
    ),
    (
        "甲、乙、丙三人中只有一人说了真话，甲说乙在说谎，乙说丙在说谎，丙说甲和乙都在说谎，谁说了真话？",
        "某公司招聘要求应聘者要么有硕士学位，要么有三年以上工作经验，小王没有硕士学位，他能否被录用？",
    ),
    (
        "一辆汽车从甲地开往乙地，前一半路程的速度是每小时六十千米，后一半是每小时四十千米，求平均速度。",
        "从一副去掉大小王的扑克牌中随机抽取两张，求两张牌都是红桃的概率，请写出完整的计算过程。",
    ),
    (
        "已知二次函数的图像经过点一二和点三四，且对称轴为直线x等于二，求这个二次函数的解析式。",
        "解方程组：两个数的和是二十，差是四，求这两个数分别是多少，并用代入法验证你的答案。",
    ),
    (
        "在网上看到一条未经证实的消息，很多人都在转发，你认为作为普通网民应该采取什么样的态度？",
        "如果你在路边捡到一个装有现金和证件的钱包，你会如何处理？请谈谈你对拾金不昧的看法。",
    ),
    (
        "垃圾分类对于保护环境有什么重要意义？请结合你所在城市的实际情况，提出三条可行的改进建议，并说明每条建议在实施过程中可能遇到的困难。",
        "全球气候变暖导致海平面上升和极端天气增多，请分析其主要成因以及个人可以采取的减排行动。",
    ),
    (
        "请解释什么是通货膨胀，通货膨胀对普通居民的储蓄和日常消费会产生哪些影响？应当如何应对？",
        "中央银行降低存款准备金率会对市场利率和企业贷款产生什么影响？请用简单的经济学原理说明。",
    ),
    (
        "长期熬夜会对人体健康造成哪些危害？请从免疫力、心血管和情绪三个方面说明，并给出改善建议。",
        "青少年每天应该保证多长时间的体育锻炼？请说明适量运动对于学习效率和心理健康的积极作用。",
    ),
    (
        "长江流域为什么成为我国重要的农业和工业基地？请从气候、水源和交通条件等方面进行分析，并说明三峡工程对长江流域经济发展产生了哪些作用。",
        "黄土高原水土流失严重的自然原因和人为原因分别有哪些？请提出几项有针对性的治理措施。",
    ),
    (
        "请用通俗易懂的语言向一位老年人解释什么是人工智能，并举出三个日常生活中常见的应用例子。",
        "智能手机的普及给人们的社交方式带来了哪些变化？请分别谈谈其积极影响和可能带来的问题。",
    ),
]

EDIT_POOL = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同"
APPENDED = ("请详细说明。", "谢谢！", "并给出理由。", "要求简洁。", "请用中文回答。")


def chat(*turns: str, **fields) -> dict:
    roles = ("user", "assistant")
    return {
        "messages": [{"role": roles[i % 2], "content": t} for i, t in enumerate(turns)],
        **fields,
    }


def edit(text: str, k: int, rng: random.Random) -> str:
    """Replace k distinct Chinese characters of ``text`` by other common characters."""
    chars = list(text)
    han = [i for i, c in enumerate(chars) if "\u4e00" <= c <= "\u9fff"]
    for i in rng.sample(han, k):
        chars[i] = rng.choice([c for c in EDIT_POOL if c != chars[i]])
    return "".join(chars)


def near_copy(i: int, text: str, rng: random.Random) -> str:
    """Pair i: 1, 2 or 3 characters edited, or a phrase appended (cycling)."""
    mode = i % 4
    return text + APPENDED[i % len(APPENDED)] if mode == 3 else edit(text, mode + 1, rng)


def crafted_corpus() -> tuple[list[dict], dict[int, tuple[int, str]]]:
    """Records for every topic's question, its near copy and its distinct sibling, in a
    fixed shuffled order; meta[position] = (topic, role) with role original/copy/distinct."""
    rng = random.Random(0)
    items = []
    for topic, (first, second) in enumerate(TOPIC_PAIRS):
        items += [(topic, "original", first), (topic, "copy", near_copy(topic, first, rng))]
        items.append((topic, "distinct", second))
    random.Random(7).shuffle(items)
    records = [chat(text, REPLY, idx=i) for i, (_, _, text) in enumerate(items)]
    return records, {i: (topic, role) for i, (topic, role, _) in enumerate(items)}


def precision_recall(threshold: float | None = None) -> tuple[float, float]:
    records, meta = crafted_corpus()
    kwargs = {} if threshold is None else {"threshold": threshold}
    _, dropped = near_dedup(records, **kwargs)
    pair = {"original", "copy"}
    hits = sum(
        meta[d.position][0] == meta[d.duplicate_of][0]
        and {meta[d.position][1], meta[d.duplicate_of][1]} == pair
        for d in dropped
    )
    return (hits / len(dropped) if dropped else 1.0), hits / len(TOPIC_PAIRS)


# ---------------------------------------------------------------- normalisation


def test_normalize_keeps_chinese_punctuation():
    text = "你好，世界。真的吗？是！注意：一；二、三「引」《书》（注）……——“双”‘单’【括】"
    assert normalize_text(text) == text


def test_normalize_unifies_width_whitespace_and_invisibles():
    assert normalize_text("ＡＢＣｘｙｚ０１２９") == "ABCxyz0129"
    assert normalize_text("你好　世界") == "你好 世界"  # ideographic space
    assert normalize_text("a \t\u00a0 b") == "a b"
    assert normalize_text("你\u200b好\ufeff\u200d\x07") == "你好"
    assert normalize_text("  一\r\n\r\n\r\n\n二  ") == "一\n\n二"
    assert normalize_text("e\u0301") == "\u00e9"  # NFC composes


def test_normalize_keeps_indentation_and_fenced_code():
    text = "代码如下：\n```python\ndef f(x):\n    return x  +  1   # two  spaces\n```\n  缩进  行"
    assert normalize_text(text) == (
        "代码如下：\n```python\ndef f(x):\n    return x  +  1   # two  spaces\n```\n  缩进 行"
    )


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_normalize_is_idempotent(text):
    once = normalize_text(text)
    assert normalize_text(once) == once


def test_normalize_record_keeps_gold_choice_equal_to_answer():
    gold = "ｆｏｏ　　答案"
    record = chat("问题", gold, choices=[gold, "x", "y"], answer="１２", idx=3, type="code")
    out = normalize_record(record)
    assert out["choices"][0] == out["messages"][-1]["content"] == "foo 答案"
    assert out["answer"] == "12" and out["idx"] == 3
    assert record["messages"][-1]["content"] == gold  # input untouched


# ---------------------------------------------------------------- exact dedup


def test_exact_dedup_treats_width_and_whitespace_variants_as_copies():
    records = [
        chat("请问ABC 123是什么？", "一个例子。"),
        chat("请问ＡＢＣ　１２３是什么？", "一个例子。"),
        chat("  请问ABC   123是什么？\n", "一个\u200b例子。"),
        chat("请问 ABC 123 是 什么？", "一个例子。"),  # spaces beside CJK carry no meaning
        chat("请问ABC 124是什么？", "一个例子。"),
    ]
    kept, dropped = exact_dedup(records)
    assert [d.position for d in dropped] == [1, 2, 3]
    assert all(d.reason == EXACT_DUPLICATE and d.duplicate_of == 0 for d in dropped)
    assert kept == [records[0], records[4]]


def test_content_key_depends_on_roles_and_turns():
    a = chat("你好", "再见")
    b = {
        "messages": [{"role": "assistant", "content": "你好"}, {"role": "user", "content": "再见"}]
    }
    assert content_key(a) != content_key(b)
    assert content_key(a) != content_key(chat("你好再见"))
    assert len(content_key(a)) == 64


# ---------------------------------------------------------------- near dedup


def test_near_dedup_precision_and_recall_on_crafted_pairs():
    precision, recall = precision_recall()
    assert recall >= 0.9
    assert precision >= 0.9


def test_near_dedup_keeps_first_and_reports_similarity():
    base = TOPIC_PAIRS[0][0]
    records = [chat(base, REPLY), chat(TOPIC_PAIRS[1][0], REPLY), chat(base + "谢谢！", REPLY)]
    kept, dropped = near_dedup(records)
    assert kept == records[:2]
    (drop,) = dropped
    assert (drop.position, drop.reason, drop.duplicate_of) == (2, NEAR_DUPLICATE, 0)
    assert 0.6 <= drop.similarity < 1.0


def test_near_dedup_keeps_different_questions_about_one_dialogue():
    dialogue = "".join(
        f"{p}第{i}句对话，内容是关于周末去哪里玩的讨论。" for i, p in enumerate("男女" * 8)
    )
    q1 = "问：男的周末想去哪里？\nA. 公园\nB. 电影院\nC. 图书馆"
    q2 = "问：女的为什么不同意？\nA. 太远\nB. 下雨\nC. 没钱"
    records = [chat(dialogue, "好的。", q1, "A"), chat(dialogue, "好的。", q2, "B")]
    kept, dropped = near_dedup(records)
    assert dropped == [] and kept == records


# ---------------------------------------------------------------- length filter


@functools.cache
def char_tokenizer():
    """A character-level tokenizer (every non-space character one token), built offline."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex("."), "isolated")]
    )
    return PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]"), raw


def test_length_filter_counts_tokens_of_the_conversation():
    hf, raw = char_tokenizer()
    records = [chat("", ""), chat("一二", "三"), chat("一二三四", "五六"), chat("一" * 9, "二")]
    for tokenizer in (hf, raw):
        kept, dropped = length_filter(records, tokenizer, min_tokens=1, max_tokens=6)
        assert kept == records[1:3]
        assert [(d.position, d.reason) for d in dropped] == [(0, TOO_SHORT), (3, TOO_LONG)]
        assert dropped[1].detail == "10 tokens > max_tokens 6"
    assert length_filter(records, None) == (records, [])


# ---------------------------------------------------------------- contamination


def test_contamination_drops_equal_and_near_questions_only():
    q_same, q_near, q_other = TOPIC_PAIRS[2][0], TOPIC_PAIRS[3][0], TOPIC_PAIRS[4][0]
    test_set = [chat(TOPIC_PAIRS[9][0], "甲"), chat(q_same, "乙"), chat(q_near, "丙")]
    train = [
        chat(q_other, "答"),
        chat("  " + q_same.replace("，", "，  "), "完全不同的回答"),  # same question, new answer
        chat(edit(q_near, 1, random.Random(1)), "丙"),
        chat(TOPIC_PAIRS[2][1], "乙"),  # same topic, different question
        chat(REPLY, q_same),  # the question only as an assistant turn
    ]
    kept, dropped = contamination(train, test_set)
    assert kept == [train[0], train[3], train[4]]
    assert [(d.position, d.reason, d.duplicate_of) for d in dropped] == [
        (1, CONTAMINATED_EXACT, 1),
        (2, CONTAMINATED_NEAR, 2),
    ]
    assert dropped[1].similarity >= 0.6


# ---------------------------------------------------------------- the pipeline and report


def pipeline_corpus() -> tuple[list[dict], list[dict]]:
    bio, hist = ab.get("biology").type_name, ab.get("role_play").key.replace("_", "-")
    records = [
        chat(TOPIC_PAIRS[0][0], "A", idx=0, type=bio, _source="bio.json", _line=1),
        chat(
            TOPIC_PAIRS[0][0].replace("，", "， "),
            "A",
            idx=1,
            type=bio,
            _source="bio.json",
            _line=2,
        ),
        chat(TOPIC_PAIRS[0][0] + "谢谢！", "A", idx=2, type=bio, _source="bio.json", _line=3),
        chat(TOPIC_PAIRS[5][0], "好", idx=0, type=hist),
        chat(TOPIC_PAIRS[6][0], "好" * 50, idx=1, type=hist),
        chat(TOPIC_PAIRS[7][0], "好", idx=2, type=hist),
        chat(TOPIC_PAIRS[8][0], "好"),
    ]
    against = [chat(TOPIC_PAIRS[7][0], "别的回答", idx=9, type=hist)]
    return records, against


def test_curate_report_lists_every_dropped_item():
    records, against = pipeline_corpus()
    hf, _ = char_tokenizer()
    origins = [(None, None)] * 3 + [("rp.json", n) for n in (4, 5, 6)] + [("syn.json", 1)]
    result = curate(
        records,
        against=against,
        tokenizer=hf,
        max_tokens=80,
        origins=origins,
        against_origins=[("rp_test.json", 1)],
    )
    report = result.report
    assert [r.get("idx") for r in result.kept] == [0, 0, None]
    assert result.kept_index == [0, 3, 6]
    drops = {(d["stage"], d["reason"], d["source"], d["line"], d["idx"]) for d in report["dropped"]}
    assert drops == {
        ("exact_dedup", EXACT_DUPLICATE, "bio.json", 2, 1),
        ("near_dedup", NEAR_DUPLICATE, "bio.json", 3, 2),
        ("length_filter", TOO_LONG, "rp.json", 5, 1),
        ("contamination", CONTAMINATED_EXACT, "rp.json", 6, 2),
    }
    by_reason = {d["reason"]: d for d in report["dropped"]}
    assert by_reason[NEAR_DUPLICATE]["duplicate_of"]["line"] == 1
    assert by_reason[CONTAMINATED_EXACT]["duplicate_of"] == {
        "corpus": "against",
        "index": 0,
        "source": "rp_test.json",
        "line": 1,
        "idx": 9,
        "type": "role-play",
        "ability": "role_play",
    }
    counts = report["counts"]
    assert (counts["input"], counts["kept"], counts["dropped"]) == (7, 3, 4)
    assert [s["stage"] for s in counts["stages"]] == [
        "exact_dedup",
        "near_dedup",
        "length_filter",
        "contamination",
    ]
    assert report["by_ability"]["biology"] == {
        "input": 3,
        "exact_dedup": 1,
        "near_dedup": 1,
        "length_filter": 0,
        "contamination": 0,
        "kept": 1,
    }
    assert list(report["by_ability"]) == ["biology", "role_play", "(untyped)"]


def test_curate_skips_stages_without_inputs_and_writes_report(tmp_path):
    records, _ = pipeline_corpus()
    assert curate(records, near_threshold=None).report["counts"]["skipped_stages"] == [
        "near_dedup",
        "length_filter",
        "contamination",
    ]
    result = curate(records)
    assert result.report["counts"]["skipped_stages"] == ["length_filter", "contamination"]
    path = write_report(result, tmp_path / "out" / "report.json")
    assert json.loads(path.read_text(encoding="utf-8")) == result.report
    assert [p.name for p in path.parent.iterdir()] == ["report.json"]


def test_curate_rejects_malformed_records_with_location():
    with pytest.raises(ValueError, match=r"input record 1 \(source a.json, line 7\).*messages"):
        curate([chat("好"), {"messages": "oops", "_source": "a.json", "_line": 7}])


DETERMINISM_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from tests.data.test_curate import crafted_corpus, pipeline_corpus
from doit.data.curate import curate
records, _ = crafted_corpus()
more, against = pipeline_corpus()
result = curate(records + more, against=against)
print(json.dumps([result.kept, result.report], ensure_ascii=False, sort_keys=True))
"""


def test_curate_is_deterministic_across_hash_seeds():
    script = DETERMINISM_SCRIPT.format(root=str(ROOT))
    outputs = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", script],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0])[1]["counts"]["dropped"] > 0


text_or_cjk = st.one_of(
    st.text(max_size=60), st.text(alphabet="你好世界，。！　 \n\tＡ１", max_size=60)
)
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant"]), "content": text_or_cjk}
)
record = st.fixed_dictionaries(
    {"messages": st.lists(message, min_size=1, max_size=4)},
    optional={
        "idx": st.integers(0, 10**6),
        "type": st.sampled_from([*ab.ABILITY_KEYS, "role-play", "unknown", ""]),
        "question_format": st.sampled_from([0, 1]),
        "choices": st.lists(text_or_cjk, min_size=3, max_size=3),
        "answer": text_or_cjk,
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(record, max_size=12),
    st.one_of(st.none(), st.lists(record, max_size=4)),
    st.floats(0.05, 1.0),
    st.booleans(),
)
def test_curate_never_raises_on_valid_records(records, against, threshold, with_tokenizer):
    tokenizer = char_tokenizer()[0] if with_tokenizer else None
    result = curate(
        records, against=against, tokenizer=tokenizer, near_threshold=threshold, max_tokens=50
    )
    counts = result.report["counts"]
    assert counts["kept"] == len(result.kept) == len(records) - len(result.report["dropped"])
    assert sum(v["kept"] for v in result.report["by_ability"].values()) == counts["kept"]
