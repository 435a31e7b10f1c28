"""Rows from scores: items without output counted per ability, benchmark rows."""

from __future__ import annotations

from types import SimpleNamespace

from doit.data.load import load_items
from doit.grid.evaluate import benchmark_rows, score_model, score_rows
from doit.io import read_json
from tests.eval.oracle import OracleLM
from tests.tiny import FIXTURE, byte_bpe_tokenizer


def test_a_model_loads_once_and_a_scored_split_is_read_back_not_redone(monkeypatch, tmp_path):
    tok = byte_bpe_tokenizer()
    tok.padding_side = "left"
    lm = OracleLM(tok, load_items(FIXTURE, "valid") + load_items(FIXTURE, "test"))
    loads = []
    monkeypatch.setattr("doit.models.load_for_inference", lambda *a: loads.append(a) or (lm, tok))
    grid = SimpleNamespace(
        eval_batch_size=4, max_new_tokens={"math": 64}, items_scored=lambda split: None
    )
    first = score_model("m", tmp_path, str(FIXTURE), grid, chat_format="doit", seed=1)
    test, valid = ("test", "letter"), ("valid", "letter")
    assert first[test]["overall"] == 100.0 and first[valid]["n_no_output"] == {}
    assert loads == [("m", None, "auto", "doit", 1)]  # one load for both splits
    assert score_model("m", tmp_path, str(FIXTURE), grid) == first and len(loads) == 1
    (tmp_path / "test.scores.json").unlink()  # killed before scoring test: test alone redone
    valid_written = (tmp_path / "valid.scores.json").stat().st_mtime_ns
    again = score_model("m", tmp_path, str(FIXTURE), grid, chat_format="doit", seed=1)
    assert len(loads) == 2 and (tmp_path / "valid.scores.json").stat().st_mtime_ns == valid_written
    assert again[test] == read_json(tmp_path / "test.scores.json")
    assert {k: v for k, v in again[test].items() if k != "eval_s"} == {
        k: v for k, v in first[test].items() if k != "eval_s"
    }
    both = score_model("m", tmp_path, str(FIXTURE), grid, formulations=("letter", "text"))
    assert len(loads) == 3 and set(both) == {test, valid, ("test", "text"), ("valid", "text")}
    assert both[test] == again[test]  # read back; only the text scorings were predicted
    assert read_json(tmp_path / "test.text.pred.rules.json")["formulation"] == "text"
    assert "mc_text" in both[("test", "text")]["abilities"]["biology"]["by_kind"]


def test_rows_carry_the_items_without_output_and_the_eval_time():
    scores = {
        "abilities": {"math": {"score": 0.0, "n_items": 1, "chance": 0.0}},
        "items": [],
        "n_no_output": {"ceval_x": 1, "math": 1},
        "eval_s": 1.5,
    }
    (row,), _ = score_rows("test", scores)
    assert row["n_no_output"] == 1 and row["eval_s"] == 1.5


def test_benchmark_rows_take_the_macro_score_and_all_items():
    bench = {
        "benchmarks": {
            "cmmlu": {
                "5": {
                    "macro": 41.0,
                    "micro": 40.0,
                    "subjects": {"a": {"acc": 40.0, "n": 100}, "b": {"acc": 42.0, "n": 50}},
                }
            }
        }
    }
    (row,) = benchmark_rows("cmmlu-5shot", bench)
    assert row == {
        "split": "cmmlu-5shot",
        "ability": "cmmlu",
        "score": 41.0,
        "n_items": 150,
        "chance": 25.0,
        "formulation": "letter",
    }
