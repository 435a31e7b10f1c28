"""Scoring rules and averages, with hand-computed answers."""

from pathlib import Path

import pytest

from doit.data import kinds as ak
from doit.data.load import load_items
from doit.data.schema import parse_record
from doit.eval.cli import main
from doit.eval.score import score_item, score_predictions

FIXTURE = Path(__file__).parents[1] / "fixtures" / "doit_download"


@pytest.fixture(scope="module")
def items():
    return load_items(FIXTURE, "test")


def find(items, key, idx):
    return next(it for it in items if it["ability"] == key and it["idx"] == idx)


def pred(item, text="", **kw):
    return {
        "type": item["type"],
        "idx": item["idx"],
        "question_format": item["question_format"],
        "prediction": text,
        **kw,
    }


def test_mc_output_then_logit_fallback(items):
    it = find(items, "understanding", 5)  # 3 options, gold B
    assert score_item(it, pred(it, "B"))["correct"]
    fallback = score_item(it, pred(it, "I think", letter_logits={"A": 0, "B": 2, "C": 1}))
    assert fallback["correct"] and fallback["via"] == "logits"
    assert not score_item(it, pred(it, "?", letter_logits={"A": 3, "B": 2, "C": 1}))["correct"]


def test_open_tie_rule_both_ways(items):
    it = find(items, "code", 7)
    tie = pred(it, choice_ppl=[2.0, 2.0, 5.0])
    assert score_item(it, tie, ties="correct")["correct"] is True
    assert score_item(it, tie, ties="wrong")["correct"] is False
    assert score_item(it, pred(it, choice_ppl=[1.0, 2.0, 0.5]))["correct"] is False
    assert score_item(it, pred(it))["correct"] is False  # no perplexities: wrong, not a crash


def test_math_carries_both_rules(items):
    it = find(items, "math", 1)  # gold \frac{3}{4}
    row = score_item(it, pred(it, "答案是 \\boxed{\\dfrac{3}{4}}"))
    assert row["correct_paper"] and row["correct_verify"] and row["correct"]


def test_averages_are_true_means(items):
    # all in-domain + OOD items: make exactly the biology and history ones wrong
    preds = []
    for it in items:
        wrong = it["ability"] in ("biology", "history")
        if it["answer_kind"] == ak.OPEN:
            preds.append(pred(it, choice_ppl=[9.0, 1.0, 1.0] if wrong else [1.0, 2.0, 3.0]))
        elif it["answer_kind"] == ak.MATH:
            preds.append(pred(it, f"\\boxed{{{it['gold']}}}"))
        elif it["answer_kind"] == ak.TF:
            preds.append(pred(it, "错误" if it["gold"] == "T" else "正确"))
        else:
            gold = it["gold"]
            text = (
                ("Z" if wrong else gold)
                if it["answer_kind"] != ak.MC
                else ("D" if wrong and gold != "D" else ("A" if wrong else gold))
            )
            preds.append(pred(it, text))
    result = score_predictions(items, preds)
    scores = {k: v["score"] for k, v in result["abilities"].items()}
    assert scores["biology"] == scores["history"] == 0.0
    assert all(v == 100.0 for k, v in scores.items() if k not in ("biology", "history"))
    assert result["macro_in_domain"] == pytest.approx(80.0)  # 8 of 10 at 100
    assert result["overall"] == pytest.approx(100 * 11 / 13)
    assert result["abilities"]["history"]["by_kind"]["tf"]["n_items"] == 2
    assert result["abilities"]["understanding"]["chance"] == pytest.approx(100 / 3)
    assert result["abilities"]["math"]["score_verify"] == 100.0


def test_missing_abilities_give_null_averages(items):
    bio = [it for it in items if it["ability"] == "biology"]
    result = score_predictions(items, [pred(it, it["gold"]) for it in bio])
    assert (
        set(result["abilities"]) == {"biology"} and result["abilities"]["biology"]["n_items"] == 2
    )
    assert result["abilities"]["biology"]["n_missing"] == 0
    assert result["macro_in_domain"] is None and result["overall"] is None


def test_duplicate_prediction_is_an_error_naming_both_lines(items):
    bio = [it for it in items if it["ability"] == "biology"]  # 2 items
    right, wrong = pred(bio[0], bio[0]["gold"]), pred(bio[1], "Z")
    with pytest.raises(ValueError, match=r"p.jsonl:3: type/idx: .*repeats line 1"):
        score_predictions(items, [right, wrong, right, right], source="p.jsonl")
    rp = find(items, "role_play", 7)
    underscore, hyphen = pred(rp, choice_ppl=[1, 2, 3]), {**pred(rp), "type": "role-play"}
    with pytest.raises(ValueError, match="p.jsonl:2: .*repeats line 1"):  # however it is spelled
        score_predictions(items, [underscore, hyphen], source="p.jsonl")


def all_right(items, keep=lambda it: True):
    out = []
    for it in filter(keep, items):
        if it["answer_kind"] == ak.OPEN:
            out.append(pred(it, choice_ppl=[1.0, 2.0, 3.0]))
        elif it["answer_kind"] == ak.TF:
            out.append(pred(it, "正确" if it["gold"] == "T" else "错误"))
        elif it["answer_kind"] == ak.MATH:
            out.append(pred(it, f"\\boxed{{{it['gold']}}}"))
        else:
            out.append(pred(it, it["gold"]))
    return out


def test_missing_items_null_the_ability_unless_allowed(items):
    dropped = find(items, "history", 11)  # history has 3 items (1 mc, 2 tf); drop a tf one
    preds = all_right(items, lambda it: it is not dropped)
    result = score_predictions(items, preds)
    history = result["abilities"]["history"]
    assert history["n_missing"] == 1 and history["n_items"] == 3
    assert history["score"] is None and history["by_kind"]["tf"]["score"] is None
    assert history["by_kind"]["mc"]["score"] == 100.0
    assert result["abilities"]["biology"] == {**result["abilities"]["biology"], "score": 100.0}
    assert result["macro_in_domain"] is None and result["overall"] is None
    allowed = score_predictions(items, preds, allow_missing=True)
    assert allowed["abilities"]["history"]["score"] == pytest.approx(200 / 3)  # missing: wrong
    assert allowed["abilities"]["history"]["by_kind"]["tf"]["score"] == 50.0
    assert allowed["macro_in_domain"] == pytest.approx((9 * 100 + 200 / 3) / 10)
    missing_rows = [r for r in allowed["items"] if r.get("missing")]
    assert [(r["type"], r["idx"], r["correct"]) for r in missing_rows] == [("history", 11, False)]


def test_score_cli_prints_missing_and_allows_it(tmp_path, items, capsys):
    import json

    dropped = find(items, "history", 11)
    p = tmp_path / "pred.jsonl"
    p.write_text(
        "".join(json.dumps(r) + "\n" for r in all_right(items, lambda i: i is not dropped))
    )
    args = ["score", str(p), "--data", str(FIXTURE), "--out", str(tmp_path / "s.json")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "history" in out and "1 missing" in out
    assert json.loads((tmp_path / "s.json").read_text())["abilities"]["history"]["score"] is None
    assert main([*args, "--allow-missing"]) == 0
    scores = json.loads((tmp_path / "s.json").read_text())
    assert scores["abilities"]["history"]["score"] == pytest.approx(200 / 3)
    assert scores["rules"]["missing"] == "wrong" and scores["rules"]["predict"] is None


def test_scores_carry_the_predict_rules_beside_the_predictions(tmp_path, items):
    import json

    from doit.eval.predict import rules_path

    p = tmp_path / "pred.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in all_right(items, lambda i: True)))
    predict_rules = {"max_new_tokens": {"math": 1024}, "n_hit_budget": {"math": 2}}
    rules_path(p).write_text(json.dumps(predict_rules))
    out = tmp_path / "s.json"
    assert main(["score", str(p), "--data", str(FIXTURE), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["rules"]["predict"] == predict_rules


def cloze_item(gold: str) -> dict:
    record = {
        "messages": [
            {"role": "user", "content": "补全：____，不亦说乎？"},
            {"role": "assistant", "content": gold},
        ],
        "idx": 0,
        "type": "chinese",
        "question_format": 0,
    }
    item, problems = parse_record(record, path="t.jsonl", line=1)
    assert item is not None, problems
    return item


@pytest.mark.parametrize(
    "output,correct",
    [
        ("学而时习之，不亦说乎", True),
        ("学而时习之，不亦说乎。\n出自《论语》", True),
        (" 学而时习之，不亦说乎！ ", True),
        ("学而时习之，不亦乐乎", False),  # the study's first-span gold would take this
        ("学而时习之", False),
        ("", False),
    ],
)
def test_cloze_compares_whole_gold_with_first_line(output, correct):
    it = cloze_item("学而时习之，不亦说乎")
    assert it["answer_kind"] == ak.CLOZE and it["gold"] == "学而时习之，不亦说乎"
    assert score_item(it, pred(it, output))["correct"] is correct


def test_unknown_prediction_is_located(items):
    with pytest.raises(ValueError, match="p.jsonl:1: type/idx"):
        score_predictions(
            items, [{"type": "biology", "idx": 999, "prediction": "A"}], source="p.jsonl"
        )
    with pytest.raises(ValueError):
        score_predictions(items, [], math="exact")


def test_score_cli_writes_scores(tmp_path, items):
    import json

    p = tmp_path / "pred.jsonl"
    p.write_text(
        "".join(
            json.dumps(pred(it, it["gold"] or "")) + "\n"
            for it in items
            if it["ability"] == "ethics"
        )
    )
    assert (
        main(
            [
                "score",
                str(p),
                "--data",
                str(FIXTURE),
                "--split",
                "test",
                "--out",
                str(tmp_path / "s.json"),
                "--ties",
                "wrong",
            ]
        )
        == 0
    )
    scores = json.loads((tmp_path / "s.json").read_text())
    assert scores["abilities"]["ethics"]["score"] == 100.0 and scores["rules"]["ties"] == "wrong"


def test_scoring_rules_page_examples(items):
    """The examples of doit/eval/README.md that no other test states."""
    from doit.eval import parsers as P
    from doit.eval.math_equiv import equal_paper, equal_verify

    it = find(items, "biology", 1)  # options A-D
    logits = {"A": -3.1, "B": -0.4, "C": -2.2, "D": -5.0}
    assert score_item(it, pred(it, "我认为是", letter_logits=logits))["extracted"] == "B"
    assert P.tf_answer("Victory") is None and P.tf_answer("答案：V") == "T"
    assert P.tf_answer("The answer: 错误") == "F"
    assert P.multiselect_answer("Answer: BD") == "BD"
    assert not equal_paper("\\frac{2}{4}", "\\frac{1}{2}")
    assert equal_verify("\\frac{2}{4}", "\\frac{1}{2}")
    assert P.math_answer("答案：3/4") == "3/4"
    assert equal_paper("50%", "50\\%") and not equal_paper("5\\text{ apples}", "5")
    tie = find(items, "code", 7)
    ppl = pred(tie, choice_ppl=[3.2, 3.2, 5.0])
    assert score_item(tie, ppl, ties="correct")["correct"]
    assert not score_item(tie, ppl, ties="wrong")["correct"]
