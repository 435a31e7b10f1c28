"""The text formulation of stored items: the same gold in both formulations, the question
without its option lines, few-shot examples re-rendered, every kind's ranked texts."""

from __future__ import annotations

from itertools import combinations
from math import comb

import pytest

from doit.data import kinds as ak
from doit.data.load import load_items
from doit.data.options import option_texts, without_options
from tests.tiny import FIXTURE

LETTER_KINDS = {ak.MC: ak.MC_TEXT, ak.TF: ak.TF_TEXT, ak.MULTISELECT: ak.MULTISELECT_TEXT}


def check_agreement(letter: dict) -> dict:
    """Assert that ``letter`` and its text rendering agree on the gold; the rendering."""
    text = ak.formulate(letter, ak.TEXT)
    assert ak.formulate(letter, ak.LETTER) is letter  # the study's form: the item as stored
    kind = letter["answer_kind"]
    if kind not in LETTER_KINDS:  # cloze, math, open: the same item in both
        assert text is letter
        return text
    question, answer = letter["messages"][-2]["content"], letter["messages"][-1]["content"]
    assert text["answer_kind"] == LETTER_KINDS[kind] and text["uid"] == letter["uid"]
    assert text["messages"][-1]["content"] == text["gold"] == text["choices"][0]
    assert len(set(text["choices"])) == len(text["choices"]) or kind == ak.TF
    assert text["chance"] == pytest.approx(1 / len(text["choices"]))
    if kind == ak.MC:
        texts = option_texts(question)
        assert text["gold"] == texts[letter["gold"]]
        assert sorted(text["choices"]) == sorted(texts[x] for x in letter["options"])
        assert text["messages"][-2]["content"] == without_options(question)
        assert text["chance"] == pytest.approx(letter["chance"])
        for user, reply, was_user, was_reply in zip(  # few-shot examples: the same, as text
            text["messages"][:-2:2],
            text["messages"][1:-2:2],
            letter["messages"][:-2:2],
            letter["messages"][1:-2:2],
        ):
            if was_reply["content"].strip() in option_texts(was_user["content"]):
                assert reply["content"] == option_texts(was_user["content"])[was_reply["content"]]
                assert user["content"] == without_options(was_user["content"])
    elif kind == ak.MULTISELECT:
        texts = option_texts(question)
        assert text["gold"] == ak.SET_JOIN.join(texts[x] for x in letter["gold"])
        assert len(text["choices"]) == comb(len(letter["options"]), len(letter["gold"]))
        assert text["chance"] == pytest.approx(letter["chance"])  # 1 / C(m, k) in both
    else:  # true/false: the stored label against its pair's other label
        assert text["gold"] == answer.strip() and len(text["choices"]) == 2
        assert ak.TRUE_LABELS.index(
            text["choices"][letter["gold"] == "F"]
        ) == ak.FALSE_LABELS.index(text["choices"][letter["gold"] == "T"])
    return text


@pytest.mark.parametrize("split", ["train", "valid", "test"])
def test_every_fixture_item_agrees_on_the_gold_in_both_formulations(split):
    kinds = {check_agreement(it)["answer_kind"] for it in load_items(FIXTURE, split)}
    assert {ak.MC_TEXT, ak.TF_TEXT, ak.MULTISELECT_TEXT} <= kinds


def test_the_question_loses_its_option_lines_and_keeps_the_rest():
    assert without_options("题目\nA. 甲\nB. 乙 C. 丙 D. 丁") == "题目"
    assert without_options("题目 A．甲 B、乙") == "题目"
    assert (
        without_options("读下文。\n问题？\nA. 甲\nB. 乙\n请作答。") == "读下文。\n问题？\n请作答。"
    )
    assert without_options("没有选项的问题") == "没有选项的问题"


def _mc(question: str, gold: str, options: str = "ABCD", **kw) -> dict:
    messages = [{"role": "user", "content": question}, {"role": "assistant", "content": gold}]
    return {
        "answer_kind": ak.MC,
        "messages": messages,
        "gold": gold,
        "options": list(options),
        "uid": "0" * 16,
        "source": "f.json",
        "line": 7,
        "choices": [],
        **kw,
    }


def test_a_few_shot_record_renders_its_examples_as_text_too():
    shots = [
        {"role": "user", "content": "一？\nA.甲\nB.乙"},
        {"role": "assistant", "content": "B"},
        {"role": "user", "content": "二？\nA.丙\nB.丁"},
        {"role": "assistant", "content": "A"},
    ]
    item = _mc("三？\nA.戊\nB.己", "B", "AB")
    item["messages"] = shots + item["messages"]
    text = ak.formulate(item, ak.TEXT)
    assert [m["content"] for m in text["messages"]] == ["一？", "乙", "二？", "丙", "三？", "己"]
    assert text["choices"] == ["己", "戊"]
    assert item["messages"][1]["content"] == "B"  # the stored item is never changed


def test_an_option_without_a_text_cannot_be_ranked_and_says_where():
    with pytest.raises(ValueError, match=r"f.json:7: text formulation: option C has no text"):
        ak.formulate(_mc("题？\nA. 甲\nB. 乙\nC.", "A", "ABC"), ak.TEXT)
    with pytest.raises(ValueError, match="formulation: expected one of letter, text"):
        ak.formulate(_mc("题？\nA. 甲\nB. 乙", "A", "AB"), "cloze")


def test_multiselect_ranks_every_set_of_the_gold_size_gold_first():
    item = _mc("哪些对？\nA. 甲\nB. 乙\nC. 丙\nD. 丁", "A、C", answer_kind=ak.MULTISELECT)
    text = ak.formulate({**item, "gold": "AC"}, ak.TEXT)
    sets = ["；".join(s) for s in combinations("甲乙丙丁", 2)]
    assert text["choices"][0] == "甲；丙" and sorted(text["choices"]) == sorted(sets)
    assert text["messages"][-1]["content"] == "甲；丙" and text["chance"] == pytest.approx(1 / 6)


def test_every_kind_a_formulation_makes_is_ranked_and_rewrites():
    for record in ak.KINDS:
        for formulation in ak.FORMULATIONS:
            target = ak.kind(record.in_formulation(formulation))
            if target is not record:
                assert not target.generated and target.rewrite is not None
    assert ak.kind(ak.MC).in_formulation(ak.TEXT) == ak.MC_TEXT
    assert ak.kind(ak.OPEN).in_formulation(ak.TEXT) == ak.OPEN
