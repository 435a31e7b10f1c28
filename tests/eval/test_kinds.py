"""The answer-kind registry's eval half: every kind both described and evaluated; a new
ranked kind goes through predict and score by registering it, nothing else."""

from __future__ import annotations

import math

import pytest

from doit.data import kinds as ak
from doit.data.load import load_items
from doit.data.options import option_texts
from doit.eval import kinds
from doit.eval.predict import encode, predict_items, prompt_text
from doit.eval.score import score_predictions
from doit.testing import continuation_logprob, tiny_llama
from tests.tiny import FIXTURE, byte_bpe_tokenizer


def test_every_registered_kind_has_its_evaluation_and_no_other():
    assert set(kinds.KIND_EVAL) == set(ak.ANSWER_KINDS)
    for name in ak.ANSWER_KINDS:
        assert callable(kinds.behaviour(name).extract) and callable(kinds.behaviour(name).judge)
    with pytest.raises(KeyError, match="poetry"):
        kinds.behaviour("poetry")


def test_rule_notes_come_in_registry_order_and_follow_the_tie_rule():
    assert list(kinds.rule_notes(kinds.Rules())) == ["mc_fallback", "open", "text"]
    assert kinds.rule_notes(kinds.Rules(ties="wrong"))["open"] == "ppl(gold) < min(distractors)"
    assert "/ characters" in kinds.rule_notes(kinds.Rules(norm="char"))["text"]
    assert "> max" in kinds.rule_notes(kinds.Rules(ties="wrong", norm="pmi"))["text"]
    with pytest.raises(ValueError, match="ties one of"):
        kinds.Rules(ties="never")
    with pytest.raises(ValueError, match="norm one of"):
        kinds.Rules(norm="bytes")


@pytest.fixture
def option_texts_kind(monkeypatch):
    """A ranked kind registered for the test: an mc item answered by its options' texts."""
    name = "mc_as_texts"

    def ranked(item):
        texts = option_texts(item["messages"][-2]["content"])
        return [texts[item["gold"]], *(t for x, t in texts.items() if x != item["gold"])]

    record = ak.AnswerKind(
        name,
        "the gold option's text",
        False,
        None,
        lambda it: 1 / len(it["options"]),
        ranked,
        ak.kind(ak.MC).alternatives,
    )
    monkeypatch.setitem(ak._KIND_BY_NAME, name, record)
    monkeypatch.setitem(kinds.KIND_EVAL, name, kinds.behaviour(ak.OPEN))
    return name


def test_a_new_ranked_kind_is_predicted_and_scored_through_the_registry(option_texts_kind):
    items = [it for it in load_items(FIXTURE, "test") if it["ability"] == "biology"]
    record = ak.kind(option_texts_kind)
    items = [{**it, "answer_kind": record.name, "chance": 0.0} for it in items]
    items = [{**it, "chance": record.chance(it)} for it in items]  # four options each
    tok = byte_bpe_tokenizer()
    model = tiny_llama(tok).eval()
    preds = predict_items(model, tok, items, batch_size=5)  # 4 texts an item: one per batch
    for it, pred in zip(items, preds):
        texts = record.ranked(it)
        assert len(pred["choice_ppl"]) == len(texts) == 4
        prompt = encode(tok, prompt_text(tok, it))
        gold = tok.apply_chat_template(
            it["messages"][:-1] + [{"role": "assistant", "content": texts[0]}], tokenize=False
        )
        span = encode(tok, gold)[len(prompt) :]
        want = continuation_logprob(model, prompt, span) / len(span)
        assert pred["choice_ppl"][0] == pytest.approx(math.exp(-want), rel=1e-4)
    scored = score_predictions(items, preds)
    for row, pred in zip(scored["items"], preds):
        assert row["correct"] == (pred["choice_ppl"][0] <= min(pred["choice_ppl"][1:]))
    assert scored["abilities"]["biology"]["chance"] == 25.0
