"""The text formulation through prediction and scoring: each normalisation ranks as the
log-likelihoods computed by hand say, training targets are the strings that are scored,
nothing is cut, and predictions are scored in the formulation they were made in."""

from __future__ import annotations

import json

import pytest

from doit.data import kinds as ak
from doit.data.load import load_items
from doit.eval import kinds
from doit.eval.cli import main
from doit.eval.evaluate import load_split_items
from doit.eval.predict import EMPTY_QUESTION, encode, predict_items, prompt_text
from doit.eval.score import score_item, score_predictions
from doit.testing import continuation_logprob, tiny_llama
from doit.train.sft.data import encode as training_encode
from doit.train.sft.data import training_template
from tests.tiny import FIXTURE, byte_bpe_tokenizer

TEXT_KINDS = (ak.MC_TEXT, ak.TF_TEXT, ak.MULTISELECT_TEXT)


@pytest.fixture(scope="module")
def tok():
    return byte_bpe_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    return tiny_llama(tok).eval()


@pytest.fixture(scope="module")
def items():
    """Two items of each of the text formulation's kinds (a C-Eval few-shot record among them)."""
    text = load_split_items(FIXTURE, "test", formulation=ak.TEXT)
    few_shot = [it for it in text if len(it["messages"]) > 2][:1]
    return few_shot + [
        it for kind in TEXT_KINDS for it in [x for x in text if x["answer_kind"] == kind][:2]
    ]


def span(tok, messages: list[dict], text: str) -> tuple[list[int], list[int]]:
    """(prompt ids, the assistant turn's ids: ``text`` and its end of turn) as rendered."""
    prompt = encode(tok, prompt_text(tok, {"messages": messages}))
    full = encode(
        tok,
        tok.apply_chat_template(
            messages[:-1] + [{"role": "assistant", "content": text}], tokenize=False
        ),
    )
    assert full[: len(prompt)] == prompt
    return prompt, full[len(prompt) :]


def test_each_normalisation_ranks_as_hand_computed_log_likelihoods(tok, model, items):
    preds = {(p["type"], p["idx"]): p for p in predict_items(model, tok, items, batch_size=3)}
    verdicts = {norm: [] for norm in kinds.NORMS}
    for it in items:
        pred = preds[(it["type"], it["idx"])]
        by_hand = {"token": [], "char": [], "pmi": []}
        for i, text in enumerate(it["choices"]):
            prompt, cont = span(tok, it["messages"], text)
            empty, same = span(tok, EMPTY_QUESTION["messages"], text)
            assert same == cont  # the unconditional span is the very same tokens
            lp, uncond = (
                continuation_logprob(model, prompt, cont),
                continuation_logprob(model, empty, cont),
            )
            assert pred["choice_logprob"][i] == pytest.approx(lp, abs=1e-4)
            assert pred["choice_uncond"][i] == pytest.approx(uncond, abs=1e-4)
            assert (pred["choice_tokens"][i], pred["choice_chars"][i]) == (len(cont), len(text))
            by_hand["token"].append(lp / len(cont))
            by_hand["char"].append(lp / len(text))
            by_hand["pmi"].append(lp - uncond)
        for norm, scores in by_hand.items():
            row = score_item(it, pred, norm=norm)
            assert row["correct"] == (scores[0] >= max(scores[1:]))
            assert row["extracted"] == scores.index(max(scores))
            verdicts[norm].append(row["correct"])
    assert len({tuple(v) for v in verdicts.values()}) > 1  # the normalisations do differ here


def test_the_training_target_is_the_scored_continuation(tok, items):
    template = training_template(tok)
    for it in items:
        ids, labels = training_encode(it["messages"], tok, template, 512, assistant_only=True)
        trained = [t for t, lab in zip(ids, labels) if lab != -100]
        scored = span(tok, it["messages"], it["choices"][0])[1]  # the gold, as ranked
        assert trained[-len(scored) :] == scored  # (before it: a few-shot record's examples)
        assert tok.decode(scored, skip_special_tokens=True) == it["gold"]


def test_ranking_never_cuts_a_prompt_and_counts_what_does_not_fit(tok, model, items):
    from doit.eval.predict import prediction_rules

    small = tiny_llama(tok)
    small.config.max_position_embeddings = 24  # shorter than every prompt and its answer
    preds = predict_items(small.eval(), tok, items[:4])
    assert all("error" in p and "choice_logprob" not in p for p in preds)
    rules = prediction_rules(preds, small, tok, {}, "doit", ak.TEXT)
    assert sum(rules["n_prompt_too_long"].values()) == 4 and rules["formulation"] == ak.TEXT
    scored = score_predictions(items[:4], preds)
    assert not any(r["correct"] for r in scored["items"])


def test_a_prediction_in_another_formulation_is_an_error_naming_its_line():
    letter = load_items(FIXTURE, "test")
    text = [ak.formulate(it, ak.TEXT) for it in letter]
    preds = [
        {"type": it["type"], "idx": it["idx"], "answer_kind": it["answer_kind"], "prediction": ""}
        for it in letter
    ]
    with pytest.raises(
        ValueError, match=r"p.jsonl:\d+: answer_kind: 'mc', but the item is 'mc_text'"
    ):
        score_predictions(text, preds, source="p.jsonl")


@pytest.mark.slow
def test_predict_records_the_formulation_and_score_reads_it_back(tmp_path, tiny_base):
    base = tiny_base
    out = tmp_path / "pred.jsonl"
    common = ["--data", str(FIXTURE), "--split", "test", "--abilities", "biology,history,ethics"]
    assert (
        main(
            [
                "predict",
                "--model",
                str(base),
                "--chat-format",
                "doit",
                *common,
                "--formulation",
                "text",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rules = json.loads(out.with_name("pred.rules.json").read_text())
    assert rules["formulation"] == "text" and rules["n_items"]["mc_text"] > 0
    assert rules["norm"] == kinds.DEFAULT_NORM  # the choice travels with the predictions
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert {x["answer_kind"] for x in lines} == {"mc_text", "tf_text", "multiselect_text"}
    for norm in kinds.NORMS:
        scores = tmp_path / f"{norm}.json"
        assert (
            main(
                [
                    "score",
                    str(out),
                    "--data",
                    str(FIXTURE),
                    "--split",
                    "test",
                    "--norm",
                    norm,
                    "--out",
                    str(scores),
                ]
            )
            == 0
        )
        result = json.loads(scores.read_text())
        assert (
            result["rules"]["norm"] == norm and result["rules"]["predict"]["formulation"] == "text"
        )
        assert set(result["abilities"]["history"]["by_kind"]) == {"mc_text", "tf_text"}


def test_per_ability_keeps_the_first_items_of_each_ability_and_every_ceval_item():
    every = load_split_items(FIXTURE, "test")
    first = load_split_items(FIXTURE, "test", per_ability=1)
    ood = [it for it in every if it["ability"].startswith("ceval_")]
    assert ood and [it for it in first if it["ability"].startswith("ceval_")] == ood
    in_domain = [it for it in first if not it["ability"].startswith("ceval_")]
    abilities = {it["ability"] for it in every if not it["ability"].startswith("ceval_")}
    assert [it["ability"] for it in in_domain] == sorted(
        abilities, key=[it["ability"] for it in every].index
    )
    assert all(it == next(x for x in every if x["ability"] == it["ability"]) for it in in_domain)
