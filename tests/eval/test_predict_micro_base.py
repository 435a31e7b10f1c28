"""``python -m doit.eval predict`` on a micro base straight out of ``recipes/pretrain.py``:
an untuned base with 256 positions, the study's default budgets, every prompt whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from doit.data.load import load_items
from doit.eval.cli import main
from doit.eval.predict import encode, prompt_text
from doit.models.chat import prepare_tokenizer

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"
)


def _pretrain(argv: list[str]) -> None:
    """``python recipes/pretrain.py ARGV``, as a user runs it."""
    run = subprocess.run(
        [sys.executable, str(REPO / "recipes/pretrain.py"), *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr[-3000:]


@pytest.fixture(scope="module")
def micro_base(micro_dir, tmp_path_factory):
    """Two steps of the vanilla_xs recipe (256 positions) on the first 300 micro documents."""
    out = tmp_path_factory.mktemp("micro_base")
    lines = (micro_dir / "pretrain" / "train.txt").read_text(encoding="utf-8").splitlines()
    (out / "docs.txt").write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
    argv = [
        "--config",
        str(REPO / "recipes/configs/pretrain/xs.yaml"),
        "--output_dir",
        str(out / "base"),
        "--micro_dir",
        str(micro_dir),
        "--train_file",
        str(out / "docs.txt"),
        "--valid_file",
        str(out / "docs.txt"),
        "--max_steps",
        "2",
        "--hidden_size",
        "32",
        "--intermediate_size",
        "64",
        "--eval_steps",
        "2",
        "--logging_steps",
        "1",
    ]
    _pretrain(argv)
    return out / "base"


@pytest.mark.slow
def test_predict_on_a_fresh_micro_base_keeps_every_prompt_whole(micro_base, micro_dir, tmp_path):
    base_tok = AutoTokenizer.from_pretrained(micro_base)
    assert not base_tok.chat_template
    out = tmp_path / "pred.jsonl"
    argv = [
        "predict",
        "--model",
        str(micro_base),
        "--data",
        str(micro_dir),
        "--split",
        "test",
        "--abilities",
        "math",
        "--chat-format",
        "doit",
        "--batch-size",
        "50",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    preds = {(p["type"], p["idx"]): p for p in map(json.loads, out.read_text().splitlines())}
    rules = json.loads((tmp_path / "pred.rules.json").read_text())
    assert rules["context"] == 256 and rules["chat_format"] == "doit"
    assert set(rules["max_new_tokens"].values()) == {1024}  # the study's default, every kind
    prepare_tokenizer(base_tok)  # the doit template, as fine-tuning renders
    items = load_items(micro_dir, "test", abilities="math", ood=False)
    assert len(preds) == len(items) == 100
    for it in items:
        pred, n_prompt = (
            preds[(it["type"], it["idx"])],
            len(encode(base_tok, prompt_text(base_tok, it))),
        )
        assert "error" not in pred and 0 < n_prompt < 256
        assert pred["max_new_tokens"] == 256 - n_prompt  # whole prompt + budget = the context
    assert sum(rules["n_hit_budget"].values()) == sum(p["hit_budget"] for p in preds.values())
