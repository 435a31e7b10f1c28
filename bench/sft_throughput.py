"""Throughput of the SFT recipe's batching against random padded batches, on CPU.

    python bench/sft_throughput.py                 # about 5 minutes on 2 cores
    python bench/sft_throughput.py --per-ability 16 --max-length 512 --repeats 1   # quick look

Builds a micro base (byte-level BPE tokenizer, random 4-layer Llama) and a DoIT-like corpus
(below), then runs the real recipe (recipes/sft.py, micro config) for one epoch, twice, with the
same SFTConfig except ``train_sampling_strategy``: ``group_by_length`` (the recipe's CPU /
no-FlashAttention batching) and ``random`` (plain padded batches). Both runs see the same
sequences. Prints, side by side, trainable (assistant) tokens per second and the padding
fraction, from each run's metrics.jsonl (evaluation and checkpointing time excluded). The two
strategies alternate ``--repeats`` times and each reports its fastest run: on a shared machine,
other processes only ever slow a run down.

DoIT-like length spread: the study's abilities differ mostly in answer length. Multiple-choice
abilities (biology, history, chinese, reasoning, ethics) ask a long question and answer one
letter; code, creative writing and math answer at length; understanding and role play are
multi-turn. Lengths are drawn log-uniformly from per-ability ranges (characters) set below.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from doit.train.rundir import read_metrics

REPO = Path(__file__).resolve().parents[1]
CHARS = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可里后小么心多天而能好都然没"
    "日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长"
)
# ability: (question chars, answer chars, turns); a letter answer where answer chars is None
SPREAD = {
    "biology": ((60, 400), None, 1),
    "history": ((40, 300), None, 1),
    "chinese": ((80, 500), None, 1),
    "reasoning": ((200, 700), None, 1),
    "ethics": ((100, 300), None, 1),
    "code": ((150, 600), (200, 1400), 1),
    "creative_writing": ((20, 150), (300, 1400), 1),
    "math": ((50, 300), (150, 1200), 1),
    "understanding": ((40, 200), (20, 120), 3),
    "role_play": ((20, 200), (20, 300), 4),
}


def text(rng: random.Random, lo_hi) -> str:
    lo, hi = lo_hi
    n = int(math.exp(rng.uniform(math.log(lo), math.log(hi))))
    return "".join(rng.choice(CHARS) for _ in range(n))


def record(rng: random.Random, ability: str, idx: int) -> dict:
    q_range, a_range, turns = SPREAD[ability]
    messages = []
    for t in range(turns):
        last = t == turns - 1
        answer = rng.choice("ABCD") if a_range is None and last else text(rng, a_range or (10, 60))
        messages += [
            {"role": "user", "content": text(rng, q_range)},
            {"role": "assistant", "content": answer},
        ]
    rec = {"messages": messages, "idx": idx, "type": ability}
    if ability in ("code", "creative_writing", "role_play"):
        rec.update(question_format=1, choices=[messages[-1]["content"], "x", "y"])
    elif ability == "math":
        messages[-1]["content"] += " \\boxed{7}"
        rec.update(question_format=0, answer="7")
    elif ability == "ethics":
        messages[-1]["content"] = "AC"
        rec["question_format"] = 0
    elif ability == "understanding":
        messages[-2]["content"] += "\nA. 一\nB. 二\nC. 三"
        messages[-1]["content"] = "B"
        rec["question_format"] = 0
    else:
        messages[-2]["content"] += "\nA. 一\nB. 二\nC. 三\nD. 四"
        rec["question_format"] = 0
    return rec


def write_corpus(root: Path, per_ability: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    for split, n in (("1000", per_ability), ("valid", 2), ("test", 2)):
        folder = root / "curated" / split
        folder.mkdir(parents=True, exist_ok=True)
        for ability in SPREAD:
            rows = [record(rng, ability, i) for i in range(n)]
            path = folder / f"{ability}_{split}.json"
            path.write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
            )
    return root


def make_base(out: Path, corpus: Path) -> Path:
    """A byte-level BPE of 512 tokens on the corpus files and a random 4-layer Llama of width 128."""
    from doit.testing import byte_bpe, file_texts, save_tiny_base

    tokenizer = byte_bpe(file_texts(corpus), 512, model_max_length=2048)
    return save_tiny_base(out, tokenizer, hidden=128, layers=4, kv_heads=4, max_positions=2048)


def run(strategy: str, base: Path, corpus: Path, out: Path, args) -> dict:
    cmd = [
        sys.executable,
        str(REPO / "recipes" / "sft.py"),
        "--config",
        str(REPO / "recipes" / "configs" / "sft" / "micro" / "full.yaml"),
        "--model_name_or_path",
        str(base),
        "--doit_dir",
        str(corpus),
        "--per_ability",
        str(args.per_ability),
        "--output_dir",
        str(out),
        "--max_length",
        str(args.max_length),
        "--schedule",
        "epochs",
        "--num_train_epochs",
        "1",
        "--per_device_train_batch_size",
        str(args.batch),
        "--global_batch_size",
        str(args.batch),
        "--eval_strategy",
        "no",
        "--train_sampling_strategy",
        strategy,
    ]
    subprocess.run(cmd, check=True, cwd=REPO, capture_output=not args.verbose)
    logs = [r for r in read_metrics(out) if r["kind"] == "train"]
    seconds = sum(r["seconds"] for r in logs)
    tokens = sum(r["nonpad_tokens"] for r in logs)
    slots = sum(r["nonpad_tokens"] / (1 - r["padding_fraction"]) for r in logs)
    return {
        "assistant_tok_per_s": sum(r["assistant_tokens"] for r in logs) / seconds,
        "tokens_per_s": tokens / seconds,
        "padding_fraction": 1 - tokens / slots,
        "seconds": seconds,
    }


def lengths(cache_dir: Path) -> list[int]:
    import datasets

    entry = next(p for p in (cache_dir / "tok").iterdir() if (p / "stats.json").is_file())
    return sorted(len(ids) for ids in datasets.load_from_disk(str(entry / "train"))["input_ids"])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--per-ability", type=int, default=32, help="items per ability (default 32)"
    )
    parser.add_argument("--repeats", type=int, default=2, help="runs per strategy (default 2)")
    parser.add_argument("--batch", type=int, default=8, help="sequences per step (default 8)")
    parser.add_argument("--max-length", type=int, default=768, help="max_length (default 768)")
    parser.add_argument("--verbose", action="store_true", help="show the recipe's output")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="doit-bench-") as tmp:
        tmp = Path(tmp)
        os.environ.update(
            DOIT_CACHE=str(tmp / "cache"), OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2")
        )
        corpus = write_corpus(tmp / "corpus", args.per_ability)
        base = make_base(tmp / "base", corpus)
        runs = {"group_by_length": [], "random": []}
        for i in range(args.repeats):
            for strategy, done in runs.items():
                done.append(run(strategy, base, corpus, tmp / f"{strategy}-{i}", args))
        results = {s: max(done, key=lambda r: r["assistant_tok_per_s"]) for s, done in runs.items()}
        lens = lengths(tmp / "cache")
    q = [lens[int(f * (len(lens) - 1))] for f in (0.1, 0.5, 0.9)]
    print(
        f"micro base: 4 layers x 128, {len(lens)} sequences, "
        f"tokens p10/p50/p90 = {q[0]}/{q[1]}/{q[2]}, "
        f"max_length {args.max_length}, batch {args.batch}, one epoch a run, best of {args.repeats}"
    )
    print(f"{'batching':<34}{'assistant tok/s':>16}{'tokens/s':>11}{'padding':>9}{'seconds':>9}")
    names = {"group_by_length": "recipe (group_by_length)", "random": "random padded batches"}
    for strategy, r in results.items():
        print(
            f"{names[strategy]:<34}{r['assistant_tok_per_s']:>16.0f}{r['tokens_per_s']:>11.0f}"
            f"{r['padding_fraction']:>9.1%}{r['seconds']:>9.1f}"
        )
    speedup = (
        results["group_by_length"]["assistant_tok_per_s"] / results["random"]["assistant_tok_per_s"]
    )
    print(f"speed-up in trainable tokens per second: {speedup:.2f}x (goal >= 1.3x)")


if __name__ == "__main__":
    main()
