"""Batched `predict` versus item-by-item evaluation, side by side in one run.

    python bench/eval_throughput.py [--data data/generated/micro] [--per-ability 20] [--batch-size 32]

Both passes use the same micro model (random weights, Llama-style, the micro
tokenizer), the same items in the same order and the same max_new_tokens per kind;
only the batching differs (batch_size=N versus 1). Prints items/s of each and the ratio.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

from doit.data.load import load_items
from doit.data.sampling import by_ability
from doit.eval.predict import predict_items
from doit.models.chat import prepare_tokenizer


def micro_model(tokenizer) -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=1024,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(cfg).eval()


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--data",
        default="data/generated/micro",
        help="DoIT dir with tokenizer/ (make demo builds it)",
    )
    p.add_argument("--per-ability", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument(
        "--math-tokens",
        type=int,
        default=64,
        help="max_new_tokens for math (predict's default, the study's 1024, is slow on CPU)",
    )
    a = p.parse_args()
    root = Path(a.data)
    tok = AutoTokenizer.from_pretrained(root / "tokenizer")
    prepare_tokenizer(tok)
    tok.padding_side = "left"
    groups = by_ability(load_items(root, "test", ood=False))
    items = [it for key in sorted(groups) for it in groups[key][: a.per_ability]]
    model = micro_model(tok)
    # the budgets this benchmark has always measured (predict's default is 1024 for every kind)
    limits = {"mc": 8, "tf": 8, "multiselect": 16, "cloze": 32, "math": a.math_tokens}
    predict_items(model, tok, items[:4], batch_size=4, max_new_tokens=limits)  # warm-up
    t_batch, batched = timed(lambda: predict_items(model, tok, items, a.batch_size, limits))
    t_single, single = timed(lambda: predict_items(model, tok, items, 1, limits))
    n = len(items)
    print(f"items: {n} ({a.per_ability} per ability), torch threads: {torch.get_num_threads()}")
    print(f"{'mode':<16}{'seconds':>10}{'items/s':>10}")
    print(f"{'item-by-item':<16}{t_single:>10.2f}{n / t_single:>10.2f}")
    print(f"{'batched':<16}{t_batch:>10.2f}{n / t_batch:>10.2f}")
    print(f"speed-up: {t_single / t_batch:.2f}x (goal >= 5x)")
    same = sum(b["prediction"] == s["prediction"] for b, s in zip(batched, single))
    print(
        f"identical predictions: {same}/{n} (padding changes float rounding, so a few may differ)"
    )


if __name__ == "__main__":
    main()
