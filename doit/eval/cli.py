"""``python -m doit.eval``: predict (needs the model) and score (needs only the predictions).

    python -m doit.eval predict --model DIR [--adapter DIR] --data DOIT_DIR --split test \\
        [--abilities a,b] [--ood] --out PRED.jsonl
    python -m doit.eval score PRED.jsonl --data DOIT_DIR --split test --out SCORES.json \\
        [--math paper|verify] [--ties correct|wrong]
"""

from __future__ import annotations

import argparse
import sys

from doit.data.io import write_json, write_jsonl
from doit.data.schema import DataError


def _kinds(text: str) -> dict[str, int]:
    out = {}
    for part in filter(None, text.split(",")):
        kind, _, n = part.partition("=")
        if not n.isdigit():
            raise argparse.ArgumentTypeError(f"expected kind=N[,kind=N], got {part!r}")
        out[kind.strip()] = int(n)
    return out


def cmd_predict(a) -> int:
    from doit.data.load import load_items
    from doit.eval.predict import load_model, predict_items

    items = load_items(a.data, a.split, abilities=a.abilities, ood=a.ood)
    if not a.ood:
        from doit.data import abilities as ab

        items = [it for it in items if it["ability"] not in ab.OOD_KEYS]
    model, tokenizer = load_model(a.model, a.adapter, a.dtype)
    preds = predict_items(model, tokenizer, items, a.batch_size, a.max_new_tokens)
    write_jsonl(a.out, preds)
    print(f"{a.out}: {len(preds)} predictions")
    return 0


def cmd_score(a) -> int:
    from doit.data.load import load_items
    from doit.eval.score import read_predictions, score_predictions

    items = load_items(a.data, a.split)
    result = score_predictions(
        items, read_predictions(a.predictions), a.math, a.ties, str(a.predictions)
    )
    write_json(a.out, result)
    for key, entry in result["abilities"].items():
        print(
            f"{key:32s} {entry['score']:6.1f}  (n={entry['n_items']}, chance {entry['chance']:.1f})"
        )
    for name in ("macro_in_domain", "overall"):
        value = result[name]
        print(f"{name:32s} {'n/a (abilities missing)' if value is None else f'{value:6.1f}'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m doit.eval", description="per-ability evaluation")
    sub = p.add_subparsers(dest="command", required=True)
    pr = sub.add_parser("predict", help="run the model once; write PRED.jsonl")
    pr.add_argument(
        "--model", required=True, help="model directory (full model or the adapter's base)"
    )
    pr.add_argument("--adapter", help="PEFT adapter directory")
    pr.add_argument("--data", required=True, help="DoIT directory")
    pr.add_argument("--split", choices=["valid", "test"], default="test")
    pr.add_argument("--abilities", help="comma-separated ability keys (default: all)")
    pr.add_argument("--ood", action="store_true", help="include the C-Eval out-of-domain sets")
    pr.add_argument("--out", required=True)
    pr.add_argument("--batch-size", type=int, default=16)
    pr.add_argument("--dtype", choices=["auto", "bf16", "fp16", "fp32"], default="auto")
    pr.add_argument(
        "--max-new-tokens",
        type=_kinds,
        default={},
        help="per-kind overrides, e.g. math=256,cloze=16 (defaults: mc/tf 8, multiselect 16, cloze 32, math 512)",
    )
    pr.set_defaults(func=cmd_predict)
    sc = sub.add_parser("score", help="score PRED.jsonl; write SCORES.json (no model needed)")
    sc.add_argument("predictions")
    sc.add_argument("--data", required=True)
    sc.add_argument("--split", choices=["valid", "test"], default="test")
    sc.add_argument("--out", required=True)
    sc.add_argument("--math", choices=["paper", "verify"], default="paper")
    sc.add_argument("--ties", choices=["correct", "wrong"], default="correct")
    sc.set_defaults(func=cmd_score)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (DataError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
