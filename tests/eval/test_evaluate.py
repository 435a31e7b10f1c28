"""evaluate(): one call from a model to its files and scores; the CLI's two commands give the
same files; items without output counted per ability."""

from __future__ import annotations

import pytest

from doit.data.load import load_items
from doit.eval.cli import main
from doit.eval.evaluate import Model, evaluate, no_output
from doit.io import read_json, write_jsonl
from tests.eval.oracle import OracleLM
from tests.tiny import FIXTURE, byte_bpe_tokenizer


@pytest.fixture
def oracle_loads(monkeypatch):
    """Loading any model gives an oracle over the fixture's items; the loads are counted."""
    tok = byte_bpe_tokenizer()
    tok.padding_side = "left"
    lm = OracleLM(tok, load_items(FIXTURE, "valid") + load_items(FIXTURE, "test"))
    loads = []
    monkeypatch.setattr("doit.models.load_for_inference", lambda *a: loads.append(a) or (lm, tok))
    return loads


def test_evaluate_writes_three_files_and_loads_a_shared_model_once(oracle_loads, tmp_path):
    model = Model("some/model", chat_format="doit", seed=3)
    for split in ("valid", "test"):
        scores = evaluate(model, FIXTURE, split, {"math": 64}, folder=tmp_path, batch_size=4)
        assert scores == read_json(tmp_path / f"{split}.scores.json")
        assert scores["overall" if split == "test" else "macro_in_domain"] == 100.0
        assert scores["n_no_output"] == {} and scores["eval_s"] >= 0
        rules = read_json(tmp_path / f"{split}.pred.rules.json")
        assert rules["max_new_tokens"]["math"] == 64 and rules["chat_format"] == "doit"
        assert scores["rules"]["predict"] == rules
    assert oracle_loads == [("some/model", None, "auto", "doit", 3)]


def test_the_cli_commands_write_what_evaluate_writes(oracle_loads, tmp_path):
    flags = ["--data", str(FIXTURE), "--split", "test"]
    pred, out = tmp_path / "cli.pred.jsonl", tmp_path / "cli.scores.json"
    argv = ["predict", "--model", "m", *flags, "--ood", "--chat-format", "doit"]
    assert main([*argv, "--max-new-tokens", "math=64", "--out", str(pred)]) == 0
    assert main(["score", str(pred), *flags, "--out", str(out)]) == 0
    whole = evaluate(
        Model("m", chat_format="doit"),
        FIXTURE,
        "test",
        {"math": 64},
        predictions=tmp_path / "e.pred.jsonl",
        scores=tmp_path / "e.scores.json",
    )
    assert pred.read_bytes() == (tmp_path / "e.pred.jsonl").read_bytes()
    assert (tmp_path / "cli.pred.rules.json").read_bytes() == (
        tmp_path / "e.pred.rules.json"
    ).read_bytes()
    cli = read_json(out)
    assert cli == {k: v for k, v in whole.items() if k not in ("eval_s", "n_no_output")}


def test_evaluate_needs_somewhere_to_write(tmp_path):
    with pytest.raises(ValueError, match="folder"):
        evaluate("m", FIXTURE, "test", predictions=tmp_path / "p.jsonl")


def test_items_without_output_are_counted_per_ability(tmp_path):
    pred = write_jsonl(
        tmp_path / "p.jsonl",
        [
            {"type": "ceval_x_fshot", "idx": 0, "prediction": "", "error": "prompt of 265 tokens"},
            {"type": "ceval_x_fshot", "idx": 1, "prediction": "A"},
            {"type": "math", "idx": 0, "prediction": "", "error": "prompt of 300 tokens"},
        ],
    )
    rows = [{"type": "ceval_x_fshot", "idx": i, "ability": "ceval_x"} for i in (0, 1)]
    rows.append({"type": "math", "idx": 0, "ability": "math"})
    assert no_output(pred, rows) == {"ceval_x": 1, "math": 1}
