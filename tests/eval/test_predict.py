"""predict -> score end to end: an oracle, a memorising micro model, determinism, LoRA."""

import json

import pytest
import torch

from doit.data import abilities as ab
from doit.data.load import load_items
from doit.eval.cli import main
from doit.eval.predict import predict_items
from doit.eval.score import score_predictions
from tests.eval.oracle import OracleLM
from tests.tiny import FIXTURE, byte_bpe_tokenizer, metaspace_tokenizer, tiny_llama


@pytest.fixture(scope="module")
def items():
    return load_items(FIXTURE, "test")


@pytest.mark.parametrize("make_tokenizer", [byte_bpe_tokenizer, metaspace_tokenizer])
def test_oracle_scores_100_and_distractor_lover_0_on_open(items, make_tokenizer):
    tok = make_tokenizer()
    tok.padding_side = "left"
    perfect = score_predictions(
        items, predict_items(OracleLM(tok, items), tok, items, batch_size=4)
    )
    assert {k: v["score"] for k, v in perfect["abilities"].items()} == {
        k: 100.0 for k in ab.ABILITY_KEYS + ab.OOD_KEYS
    }
    assert perfect["overall"] == 100.0
    fooled = score_predictions(
        items, predict_items(OracleLM(tok, items, prefer_choice=1), tok, items)
    )
    for key in ("code", "creative_writing", "role_play"):
        assert fooled["abilities"][key]["score"] == 0.0


def test_first_step_logits_are_per_option(items):
    tok = byte_bpe_tokenizer()
    tok.padding_side = "left"
    preds = predict_items(OracleLM(tok, items), tok, items)
    und = next(p for p in preds if p["type"] == "understanding")
    assert list(und["letter_logits"]) == ["A", "B", "C"] and und["letter_logits"]["B"] == 10.0
    assert all("letter_logits" not in p for p in preds if p["type"] in ("math", "ethics"))


def train_to_memorise(model, tok, items, steps=60):
    """Full-batch training on the assistant tokens of ``items`` (open items: their gold choice)."""
    encs = [
        tok.apply_chat_template(
            it["messages"]
            if it["answer_kind"] != ab.OPEN
            else it["messages"][:-1] + [{"role": "assistant", "content": it["choices"][0]}],
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
        )
        for it in items
    ]
    width = max(len(e["input_ids"]) for e in encs)
    ids = torch.tensor(
        [e["input_ids"] + [tok.pad_token_id] * (width - len(e["input_ids"])) for e in encs]
    )
    keep = torch.tensor([e["assistant_masks"] + [0] * (width - len(e["input_ids"])) for e in encs])
    mask = torch.tensor(
        [[1] * len(e["input_ids"]) + [0] * (width - len(e["input_ids"])) for e in encs]
    )
    labels = torch.where(keep == 1, ids, -100)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    return model.eval()


@pytest.fixture(scope="module")
def memorised(tmp_path_factory, items):
    tok = byte_bpe_tokenizer()
    torch.manual_seed(0)
    model = train_to_memorise(tiny_llama(tok, hidden=64, layers=2), tok, items)
    out = tmp_path_factory.mktemp("memorised")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.mark.slow
def test_memorised_model_scores_high_and_files_are_byte_identical(memorised, tmp_path):
    for run in ("a", "b"):
        assert (
            main(
                [
                    "predict",
                    "--model",
                    str(memorised),
                    "--data",
                    str(FIXTURE),
                    "--split",
                    "test",
                    "--ood",
                    "--out",
                    str(tmp_path / f"pred_{run}.jsonl"),
                    "--max-new-tokens",
                    "math=24",
                ]
            )
            == 0
        )
        assert (
            main(
                [
                    "score",
                    str(tmp_path / f"pred_{run}.jsonl"),
                    "--data",
                    str(FIXTURE),
                    "--split",
                    "test",
                    "--out",
                    str(tmp_path / f"scores_{run}.json"),
                ]
            )
            == 0
        )
    assert (tmp_path / "pred_a.jsonl").read_bytes() == (tmp_path / "pred_b.jsonl").read_bytes()
    assert (tmp_path / "scores_a.json").read_bytes() == (tmp_path / "scores_b.json").read_bytes()
    scores = json.loads((tmp_path / "scores_a.json").read_text())
    rows = scores["items"]
    assert sum(r["correct"] for r in rows) / len(rows) >= 0.9, [r for r in rows if not r["correct"]]


@pytest.mark.slow
def test_lora_adapter_evaluates(memorised, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(memorised)
    lora = get_peft_model(
        base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    )
    lora.save_pretrained(tmp_path / "adapter")
    out = tmp_path / "pred.jsonl"
    assert (
        main(
            [
                "predict",
                "--model",
                str(memorised),
                "--adapter",
                str(tmp_path / "adapter"),
                "--data",
                str(FIXTURE),
                "--abilities",
                "biology,code",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    with_adapter = [json.loads(x) for x in out.read_text().splitlines()]
    assert (
        main(
            [
                "predict",
                "--model",
                str(memorised),
                "--data",
                str(FIXTURE),
                "--abilities",
                "biology,code",
                "--out",
                str(tmp_path / "base.jsonl"),
            ]
        )
        == 0
    )
    without = [json.loads(x) for x in (tmp_path / "base.jsonl").read_text().splitlines()]
    assert [p["idx"] for p in with_adapter] == [p["idx"] for p in without]
    assert with_adapter != without  # the (random, non-zero) adapter changed the outputs
