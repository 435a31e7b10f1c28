"""Answer extraction and math equivalence, on known answers and tricky outputs."""

import pytest

from doit.eval import parsers as P
from doit.eval.math_equiv import equal_paper, equal_verify, normalize_paper


@pytest.mark.parametrize(
    "out,expected",
    [
        ("B", "B"),
        ("  C\n", "C"),
        ("Ｄ", "D"),
        ("E", None),
        ("b", None),
        ("Because", None),
        ("B.", None),
        ("答案是B", None),
        ("?", None),
    ],
)
def test_mc_letter(out, expected):
    assert P.mc_letter(out, ["A", "B", "C", "D"]) == expected


def test_logit_fallback_restricted_to_item_letters():
    logits = {"A": 0.1, "B": 0.3, "C": 0.2, "D": 9.0}
    assert P.logit_choice(logits, ["A", "B", "C"]) == "B"  # D is not an option of a 3-option item
    assert P.logit_choice({"A": 1.0, "B": 1.0}, ["A", "B"]) == "A"  # ties: first option
    assert P.logit_choice(None, ["A"]) is None


@pytest.mark.parametrize(
    "out,expected",
    [
        ("正确", "T"),
        ("对", "T"),
        ("√", "T"),
        ("T", "T"),
        ("V", "T"),
        ("错误", "F"),
        ("错", "F"),
        ("×", "F"),
        ("F", "F"),
        ("X", "F"),
        ("这句话是正确的", "T"),
        ("答案：错误。", "F"),
        ("T or F", None),
        ("正确还是错误", None),
        ("不知道", None),
        ("", None),
        ("The answer", None),  # T inside a word is not the keyword T
        ("Ｔ", "T"),  # full-width
    ],
)
def test_tf_answer(out, expected):
    assert P.tf_answer(out) == expected


@pytest.mark.parametrize(
    "out,expected",
    [
        ("疑是地上霜", "疑是地上霜"),
        ("答：疑是地上霜。", "答"),
        ("hello 世界!", "世界"),
        ("abc", None),
    ],
)
def test_cloze_first_chinese_span(out, expected):
    assert P.cloze_answer(out) == expected


@pytest.mark.parametrize(
    "out,expected",
    [
        ("AC", "AC"),
        ("A、C", "AC"),
        ("C,A", "AC"),
        ("分析：B不对\nA C", "AC"),
        ("AC\n\n", "AC"),
        ("Answer: BD", "BD"),
        ("答案：ＡＤ", "AD"),
        ("我不知道", None),
        ("", None),
    ],
)
def test_multiselect_last_line(out, expected):
    assert P.multiselect_answer(out) == expected


@pytest.mark.parametrize(
    "out,expected",
    [
        ("so $\\boxed{7}$.", "7"),
        ("\\boxed{1} then \\boxed{\\frac{3}{4}}", "\\frac{3}{4}"),
        ("\\boxed{\\frac{\\sqrt{2}}{2}}", "\\frac{\\sqrt{2}}{2}"),
        ("\\fbox{12}", "12"),
        ("答案是 $x=5$", "x=5"),
        ("所以答案为 42。", "42"),
        ("一共有 3 个和 15 个", "15"),
        ("没有数字", None),
    ],
)
def test_math_answer(out, expected):
    assert P.math_answer(out) == expected


@pytest.mark.parametrize(
    "pred,gold,same",
    [
        ("\\dfrac{3}{4}", "\\frac{3}{4}", True),
        ("3/4", "\\frac{3}{4}", True),
        ("\\frac34", "\\frac{3}{4}", True),
        ("0.5", "\\frac{1}{2}", True),
        ("5 cm", "5", True),
        ("5厘米", "5", True),
        ("5\\text{ cm}", "5", True),
        ("x = 7", "7", True),
        ("90^\\circ", "90", True),
        ("1,000", "1000", True),
        ("\\left(1,2\\right)", "(1,2)", True),
        ("\\sqrt2", "\\sqrt{2}", True),
        ("7", "8", False),
        ("\\frac{3}{5}", "\\frac{3}{4}", False),
    ],
)
def test_math_equivalence_both_rules(pred, gold, same):
    assert equal_paper(pred, gold) is same
    if same:  # math-verify agrees on all of these except where units/prefixes are text
        assert isinstance(equal_verify(pred, gold), bool)
    else:
        assert equal_verify(pred, gold) is False


def test_verify_handles_equivalent_forms():
    assert equal_verify("\\frac{1}{2}", "0.5") is True
    assert equal_verify(None, "1") is False
    assert normalize_paper("\\tfrac{1}{2}") == "\\frac{1}{2}"
