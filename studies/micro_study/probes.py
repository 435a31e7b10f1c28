"""Two probes that locate why the micro bases answer letter questions at chance.

    python studies/micro_study/probes.py recall BASE --data CORPUS
    python studies/micro_study/probes.py letters BASE [--scratch] [--steps 3000] [--lr 1e-3]
        [--target letter|copy|next]

``recall``: does the base know the facts asked in the question's own wording? For each
knowledge item (biology, history, chinese; first 100 of train and of test), rank its options
by the base's mean log-likelihood of ``问：<question>答：<option>。`` and count how often the
gold ranks first. No letters are involved.

``letters``: can the model learn the bare letter skill at all? It trains the base (or, with
``--scratch``, a fresh model of the same shape) on drills only: ``下列哪一项是X？`` with four
options, one of which is X, loss on the answer letter alone, 8 drills a step, and prints the
accuracy on 200 held-out drills every 250 steps. Nothing here recalls a fact; the option
that says X is in the prompt. Two controls: ``--target copy`` asks for X itself (no option
to find), ``--target next`` for the first token of the option after the one that says X
(find the option, then read forwards, as an induction head does, instead of backwards to
its letter).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

import doit.models  # noqa: F401 -- registers the value-residual architectures
from doit.data.load import load_items
from doit.data.micro.world import COLOURS, FOODS, HABITATS
from doit.eval.predict import sequence_ppl

KNOWLEDGE = ("biology", "history", "chinese")
DRILL_VALUES = COLOURS + FOODS + HABITATS


def _items(data: Path, ability: str, split: str, k: int = 100) -> list[dict]:
    """The first ``k`` items of ``ability`` in ``split`` (train: the full pool)."""
    name = "full" if split == "train" else split
    return load_items(data, name, pool="full", abilities=[ability], ood=False)[:k]


def _ranked_first(model, tok, prefix: str, options: dict[str, str]) -> str:
    """The option letter whose text, after ``prefix``, has the lowest perplexity."""
    start = len(tok(prefix, add_special_tokens=False)["input_ids"])
    seqs = [
        (tok(prefix + text + "。", add_special_tokens=False)["input_ids"], start)
        for text in options.values()
    ]
    with torch.no_grad():
        ppl = sequence_ppl(model, seqs, tok.pad_token_id)
    return list(options)[ppl.index(min(ppl))]


def recall(model, tok, data: Path) -> None:
    for ability in KNOWLEDGE:
        for split in ("train", "test"):
            hits = n = 0
            for record in _items(data, ability, split):
                lines = record["messages"][-2]["content"].split("\n")
                options = {x[0]: x[3:] for x in lines[1:] if x[1:3] == ". "}
                gold = record["messages"][-1]["content"]
                if gold not in options:
                    continue  # true/false and cloze items
                prefix = "问：" + lines[0] + "答："
                best = _ranked_first(model, tok, prefix, options)
                hits, n = hits + (best == gold), n + 1
            print(
                f"{ability:8s} {split:5s} {n:3d} items: gold ranked first {100 * hits / n:.1f}% "
                f"(chance {100 / 4:.0f}%)"
            )


def _drill(tok, rng: random.Random, target: str) -> tuple[list[int], int]:
    options = rng.sample(DRILL_VALUES, 4)
    i = rng.randrange(3 if target == "next" else 4)
    text = f"下列哪一项是{options[i]}？\n" + "\n".join(f"{c}. {o}" for c, o in zip("ABCD", options))
    answer = {"letter": "ABCD"[i], "copy": options[i], "next": options[(i + 1) % 4]}[target]
    ids = tok(text + "\n答案：", add_special_tokens=False)["input_ids"]
    return ids, tok(answer, add_special_tokens=False)["input_ids"][0]


def letters(model, tok, steps: int, lr: float, target: str) -> None:
    def accuracy() -> float:
        rng, hits = random.Random(99), 0
        model.eval()
        with torch.no_grad():
            for _ in range(200):
                ids, gold = _drill(tok, rng, target)
                hits += int(model(torch.tensor([ids])).logits[0, -1].argmax().item() == gold)
        model.train()
        return hits / 200

    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    rng, start = random.Random(0), time.time()
    for step in range(steps + 1):
        if step % 250 == 0:
            print(
                f"step {step:5d} ({8 * step:6d} drills): accuracy {accuracy():.3f}, "
                f"{time.time() - start:.0f} s",
                flush=True,
            )
        batch = [_drill(tok, rng, target) for _ in range(8)]  # every drill has the same length
        logits = model(torch.tensor([ids for ids, _ in batch])).logits[:, -1]
        loss = torch.nn.functional.cross_entropy(logits, torch.tensor([g for _, g in batch]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("probe", choices=("recall", "letters"))
    p.add_argument("base", type=Path, help="a micro base (model and tokenizer)")
    p.add_argument("--data", type=Path, default=Path("data/generated/micro"))
    p.add_argument("--scratch", action="store_true", help="letters: a fresh model, same shape")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--target", choices=("letter", "copy", "next"), default="letter")
    args = p.parse_args(argv)
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(args.base)
    if args.scratch:
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(args.base))
    else:
        model = AutoModelForCausalLM.from_pretrained(args.base)
    if args.probe == "recall":
        recall(model.eval(), tok, args.data)
    else:
        letters(model.train(), tok, args.steps, args.lr, args.target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
