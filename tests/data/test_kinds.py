"""The answer-kind registry's declarative half and the one option-line parser."""

from __future__ import annotations

import pytest

from doit.data import abilities as ab
from doit.data import kinds as ak
from doit.data.options import option_letters, option_marks, option_texts


def test_every_ability_kind_is_registered_and_generated_kinds_keep_their_file_order():
    assert len(set(ak.ANSWER_KINDS)) == len(ak.KINDS) == 9  # 6 stored, 3 of the text formulation
    assert {k for a in ab.ALL for k in a.answer_kinds} <= set(ak.ANSWER_KINDS)
    stored = {k for a in ab.ALL for k in a.answer_kinds}
    assert {k.name for k in ak.KINDS if k.rewrite} == set(ak.ANSWER_KINDS) - stored
    # the order of every per-kind table in PRED.rules.json and of --max-new-tokens' defaults
    assert ak.GENERATED_KINDS == ("mc", "tf", "multiselect", "cloze", "math")
    for kind in ak.KINDS:
        if kind.generated:
            assert kind.default_budget == ak.STUDY_MAX_NEW_TOKENS and kind.ranked is None
        else:
            assert kind.default_budget is None and kind.ranked is not None
    with pytest.raises(KeyError, match="poetry.*mc, tf"):
        ak.kind("poetry")


def test_a_record_is_either_generated_with_a_budget_or_ranked():
    record = ak.kind(ak.MC)
    with pytest.raises(ValueError, match="x: generated"):
        ak.AnswerKind("x", "", True, None, record.chance, None, record.alternatives)
    with pytest.raises(ValueError, match="x: generated"):
        ak.AnswerKind("x", "", True, 8, record.chance, lambda it: [], record.alternatives)
    with pytest.raises(ValueError, match="x: ranked"):
        ak.AnswerKind("x", "", False, None, record.chance, None, record.alternatives)
    assert ak.AnswerKind("x", "", False, None, record.chance, lambda it: [], record.alternatives)


@pytest.mark.parametrize(
    "kind,item,chance",
    [
        (ak.MC, {"options": ["A", "B", "C"], "gold": "B"}, 1 / 3),
        (ak.MULTISELECT, {"options": list("ABCD"), "gold": "AC"}, 1 / 6),
        (ak.MULTISELECT, {"options": list("ABCDE"), "gold": "A"}, 1 / 5),
        (ak.TF, {"options": [], "gold": "T"}, 0.5),
        (ak.CLOZE, {"options": [], "gold": "床前明月光"}, 0.0),
        (ak.MATH, {"options": [], "gold": "7"}, 0.0),
        (ak.OPEN, {"options": [], "gold": "x", "choices": ["x", "y", "z"]}, 1 / 3),
    ],
)
def test_chance_of_each_kind(kind, item, chance):
    assert ak.kind(kind).chance(item) == pytest.approx(chance)


def test_option_marks_at_line_starts_after_spaces_and_in_full_width():
    question = "下列哪项正确？\nA. 甲\nB、乙 C：丙\nＤ．丁（注）"
    assert option_marks(question) == [("A", "甲"), ("B", "乙"), ("C", "丙"), ("D", "丁（注）")]
    assert option_letters(question) == ["A", "B", "C", "D"]
    # texts are kept as written: full-width punctuation inside a text is not folded
    assert option_texts("Q\nA) 一，二\nB) 三")["A"] == "一，二"


def test_option_texts_skip_empty_options_but_letters_keep_them():
    question = "Q\nA.\nB. 乙\nC. 丙"
    assert option_letters(question) == ["A", "B", "C"]
    assert option_texts(question) == {"B": "乙", "C": "丙"}
    assert option_marks("维生素C是什么？") == []  # a letter inside a word is no mark


def _item(kind, question, answer, gold, uid="0" * 16, **kw):
    messages = [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    return {"answer_kind": kind, "messages": messages, "gold": gold, "uid": uid, **kw}


def test_format_free_alternatives_of_each_kind():
    one_line = _item(ak.MC, "题目\nA. 甲 B. 乙 C. 丙", "B", "B")
    assert ak.kind(ak.MC).alternatives(one_line, []) == ("乙", ["甲", "丙"])
    ethics = _item(ak.MULTISELECT, "题目\nA. 甲\nB. 乙\nC. 丙\nD. 丁", "A、C", "AC")
    assert ak.kind(ak.MULTISELECT).alternatives(ethics, []) == ("甲；丙", ["乙", "丁"])
    true, false = _item(ak.TF, "说法一", "正确", "T"), _item(ak.TF, "说法二", "错", "F")
    assert ak.kind(ak.TF).alternatives(true, [true, false]) == ("正确", ["错"])
    assert ak.kind(ak.TF).alternatives(true, [true]) is None  # no item with the other label
    poems = [_item(ak.CLOZE, "上句", g, g, uid=f"{i:016d}") for i, g in enumerate("甲乙丙丁戊")]
    gold, alts = ak.kind(ak.CLOZE).alternatives(poems[0], poems)
    assert gold == "甲" and len(alts) == 3 and set(alts) <= set("乙丙丁戊")
    code = _item(ak.OPEN, "写代码", "x", "x", choices=["x", "y", "z"])
    assert ak.kind(ak.OPEN).alternatives(code, []) == ("x", ["y", "z"])
    assert ak.kind(ak.OPEN).ranked(code) == ["x", "y", "z"]
