"""The answer-kind registry's declarative half and the one option-line parser."""

from __future__ import annotations

import pytest

from doit.data import abilities as ab
from doit.data.options import option_letters, option_marks, option_texts


def test_every_ability_kind_is_registered_and_generated_kinds_keep_their_file_order():
    assert len(set(ab.ANSWER_KINDS)) == len(ab.KINDS) == 9  # 6 stored, 3 of the text formulation
    assert {k for a in ab.ALL for k in a.answer_kinds} <= set(ab.ANSWER_KINDS)
    stored = {k for a in ab.ALL for k in a.answer_kinds}
    assert {k.name for k in ab.KINDS if k.rewrite} == set(ab.ANSWER_KINDS) - stored
    # the order of every per-kind table in PRED.rules.json and of --max-new-tokens' defaults
    assert ab.GENERATED_KINDS == ("mc", "tf", "multiselect", "cloze", "math")
    for kind in ab.KINDS:
        if kind.generated:
            assert kind.default_budget == ab.STUDY_MAX_NEW_TOKENS and kind.ranked is None
        else:
            assert kind.default_budget is None and kind.ranked is not None
    with pytest.raises(KeyError, match="poetry.*mc, tf"):
        ab.kind("poetry")


def test_a_record_is_either_generated_with_a_budget_or_ranked():
    record = ab.kind(ab.MC)
    with pytest.raises(ValueError, match="x: generated"):
        ab.AnswerKind("x", "", True, None, record.chance, None, record.alternatives)
    with pytest.raises(ValueError, match="x: generated"):
        ab.AnswerKind("x", "", True, 8, record.chance, lambda it: [], record.alternatives)
    with pytest.raises(ValueError, match="x: ranked"):
        ab.AnswerKind("x", "", False, None, record.chance, None, record.alternatives)
    assert ab.AnswerKind("x", "", False, None, record.chance, lambda it: [], record.alternatives)


@pytest.mark.parametrize(
    "kind,item,chance",
    [
        (ab.MC, {"options": ["A", "B", "C"], "gold": "B"}, 1 / 3),
        (ab.MULTISELECT, {"options": list("ABCD"), "gold": "AC"}, 1 / 6),
        (ab.MULTISELECT, {"options": list("ABCDE"), "gold": "A"}, 1 / 5),
        (ab.TF, {"options": [], "gold": "T"}, 0.5),
        (ab.CLOZE, {"options": [], "gold": "床前明月光"}, 0.0),
        (ab.MATH, {"options": [], "gold": "7"}, 0.0),
        (ab.OPEN, {"options": [], "gold": "x", "choices": ["x", "y", "z"]}, 1 / 3),
    ],
)
def test_chance_of_each_kind(kind, item, chance):
    assert ab.kind(kind).chance(item) == pytest.approx(chance)


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
    one_line = _item(ab.MC, "题目\nA. 甲 B. 乙 C. 丙", "B", "B")
    assert ab.kind(ab.MC).alternatives(one_line, []) == ("乙", ["甲", "丙"])
    ethics = _item(ab.MULTISELECT, "题目\nA. 甲\nB. 乙\nC. 丙\nD. 丁", "A、C", "AC")
    assert ab.kind(ab.MULTISELECT).alternatives(ethics, []) == ("甲；丙", ["乙", "丁"])
    true, false = _item(ab.TF, "说法一", "正确", "T"), _item(ab.TF, "说法二", "错", "F")
    assert ab.kind(ab.TF).alternatives(true, [true, false]) == ("正确", ["错"])
    assert ab.kind(ab.TF).alternatives(true, [true]) is None  # no item with the other label
    poems = [_item(ab.CLOZE, "上句", g, g, uid=f"{i:016d}") for i, g in enumerate("甲乙丙丁戊")]
    gold, alts = ab.kind(ab.CLOZE).alternatives(poems[0], poems)
    assert gold == "甲" and len(alts) == 3 and set(alts) <= set("乙丙丁戊")
    code = _item(ab.OPEN, "写代码", "x", "x", choices=["x", "y", "z"])
    assert ab.kind(ab.OPEN).alternatives(code, []) == ("x", ["y", "z"])
    assert ab.kind(ab.OPEN).ranked(code) == ["x", "y", "z"]
