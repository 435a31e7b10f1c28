"""``python -m doit.eval``: predict (needs the model) and score (needs only the predictions).

    python -m doit.eval predict --model DIR [--adapter DIR] --data DOIT_DIR --split test \\
        [--abilities a,b] [--ood] [--chat-format doit|native] [--max-new-tokens kind=N] \\
        [--formulation letter|text] --out PRED.jsonl
    python -m doit.eval score PRED.jsonl --data DOIT_DIR --split test --out SCORES.json \\
        [--math paper|verify] [--ties correct|wrong] [--norm token|char|pmi] [--allow-missing]
    python -m doit.eval bench --model DIR [--adapter DIR] --tasks cmmlu,agieval,ceval \\
        --data-dir BENCH_DIR --shots 0,5 --out BENCH.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from doit.data.chat_formats import CHAT_FORMATS
from doit.data.kinds import FORMULATIONS, LETTER
from doit.data.schema import DataError
from doit.eval.kinds import DEFAULT_NORM, NORMS
from doit.flags import ArgumentParser, at_least
from doit.io import OutputKind, check_output, json_holding, write_json


def _predictions_file(path: Path) -> bool:
    from doit.eval.predict import rules_path

    return rules_path(path).is_file()


# What each writer's --out holds: an existing --out is replaced only when it is one (or --overwrite).
PREDICTIONS = OutputKind("predictions", "file", _predictions_file, "no PRED.rules.json beside it")
SCORES = OutputKind(
    "scores", "file", json_holding("abilities", "macro_in_domain"), "no scores.json keys"
)
BENCH = OutputKind("benchmark", "file", json_holding("benchmarks"), "no BENCH.json keys")


def check_out(a, kind: OutputKind, inputs: dict) -> None:
    """``--out`` under doit's one output rule, before any model is loaded or item scored."""
    check_output(a.out, kind, inputs=inputs, overwrite=a.overwrite)


def _kinds(text: str) -> dict[str, int]:
    out = {}
    for part in filter(None, text.split(",")):
        kind, _, n = part.partition("=")
        if not n.isdigit():
            raise argparse.ArgumentTypeError(f"expected kind=N[,kind=N], got {part!r}")
        out[kind.strip()] = int(n)
    return out


def cmd_predict(a) -> int:
    from doit.eval.evaluate import Model, load_split_items, predict_split
    from doit.eval.predict import rules_path

    check_out(
        a,
        PREDICTIONS,
        {
            "the model (--model)": a.model,
            "the adapter (--adapter)": a.adapter,
            "the corpus (--data)": a.data,
        },
    )
    items = load_split_items(a.data, a.split, a.abilities, a.ood, a.formulation)
    model = Model(a.model, a.adapter, a.dtype, a.chat_format, a.seed)
    rules = predict_split(model, items, a.out, a.max_new_tokens, a.batch_size, a.formulation)
    print(f"{a.out}: {len(items)} predictions; rules in {rules_path(a.out)}")
    for kind, n in rules["n_hit_budget"].items():
        if n:
            print(
                f"  {kind}: {n} of {rules['n_items'][kind]} outputs ran to their budget "
                f"({rules['max_new_tokens'][kind]} new tokens, or what the context of "
                f"{rules['context']} leaves after the prompt)"
            )
    for kind, n in rules["n_prompt_too_long"].items():
        if n:
            print(f"  {kind}: {n} prompts longer than the context ({rules['context']}): no output")
    return 0


def cmd_score(a) -> int:
    from doit.data.kinds import formulate
    from doit.data.load import load_items
    from doit.eval.predict import rules_path
    from doit.eval.score import formulation_of, score_file

    check_out(
        a,
        SCORES,
        {
            "the predictions": a.predictions,
            "their rules": rules_path(a.predictions),
            "the corpus (--data)": a.data,
        },
    )
    formulation = formulation_of(a.predictions)  # the items as the predictions saw them
    items = [formulate(it, formulation) for it in load_items(a.data, a.split)]
    result = score_file(items, a.predictions, a.math, a.ties, a.allow_missing, a.norm)
    write_json(a.out, result)
    for key, entry in result["abilities"].items():
        score = "   n/a" if entry["score"] is None else f"{entry['score']:6.1f}"
        missing = f", {entry['n_missing']} missing" if entry["n_missing"] else ""
        print(f"{key:32s} {score}  (n={entry['n_items']}{missing}, chance {entry['chance']:.1f})")
    for name in ("macro_in_domain", "overall"):
        value = result[name]
        print(f"{name:32s} {'n/a (abilities missing)' if value is None else f'{value:6.1f}'}")
    if any(e["n_missing"] for e in result["abilities"].values()) and not a.allow_missing:
        print("items without a prediction: their abilities are n/a (--allow-missing: count wrong)")
    return 0


def cmd_bench(a) -> int:
    from doit.eval.public_bench import letter_tokens, make_lm, run_bench

    check_out(
        a,
        BENCH,
        {
            "the model (--model)": a.model,
            "the adapter (--adapter)": a.adapter,
            "the benchmarks (--data-dir)": a.data_dir,
        },
    )
    lm = make_lm(a.model, a.adapter, a.dtype, a.batch_size)
    run = {"model": a.model, "adapter": a.adapter, "letter_tokens": letter_tokens(lm)}
    result = run_bench(lm, a.data_dir, a.tasks, a.shots, **run)
    write_json(a.out, result)
    for bench, by_shots in result["benchmarks"].items():
        for k, entry in by_shots.items():
            print(
                f"{bench:8s} {k}-shot  macro {entry['macro']:6.2f}  micro {entry['micro']:6.2f}"
                f"  ({len(entry['subjects'])} subjects)"
            )
    return 0


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="python -m doit.eval", description="per-ability evaluation")
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
    pr.add_argument(
        "--overwrite", action="store_true", help="replace an existing --out of another kind"
    )
    pr.add_argument("--batch-size", type=at_least(1), default=16)
    pr.add_argument("--dtype", choices=["auto", "bf16", "fp16", "fp32"], default="auto")
    pr.add_argument(
        "--max-new-tokens",
        type=_kinds,
        default={},
        help="per-kind budgets, e.g. mc=8,tf=8,multiselect=64,cloze=32,math=512 (default: the "
        "study's 1024 for every kind; set them for grids: a model that never ends its turn "
        "keeps its batch running to the budget)",
    )
    pr.add_argument(
        "--chat-format",
        choices=CHAT_FORMATS,
        help="render as fine-tuning with this chat_format does (needed for an untuned base; "
        "default: the tokenizer's saved template)",
    )
    pr.add_argument(
        "--seed",
        type=int,
        default=0,
        help="fine-tuning's seed: initialises speaker-token rows added to an untuned base",
    )
    pr.add_argument(
        "--formulation",
        choices=FORMULATIONS,
        default=LETTER,
        help="letter: the items as stored (the study's); text: multiple-choice items without "
        "their option lines, answered by the gold option's text and scored by ranking every "
        "option's text (true/false: the two labels; multi-select: the sets of the gold's size). "
        "Recorded in PRED.rules.json, which score reads",
    )
    pr.set_defaults(func=cmd_predict)
    sc = sub.add_parser("score", help="score PRED.jsonl; write SCORES.json (no model needed)")
    sc.add_argument("predictions")
    sc.add_argument("--data", required=True)
    sc.add_argument("--split", choices=["valid", "test"], default="test")
    sc.add_argument("--out", required=True)
    sc.add_argument(
        "--overwrite", action="store_true", help="replace an existing --out of another kind"
    )
    sc.add_argument("--math", choices=["paper", "verify"], default="paper")
    sc.add_argument("--ties", choices=["correct", "wrong"], default="correct")
    sc.add_argument(
        "--norm",
        choices=list(NORMS),
        help=f"how the text formulation ranks its texts (default: the one PRED.rules.json "
        f"records, else {DEFAULT_NORM}, chosen on the micro study's valid split): "
        + "; ".join(f"{k}: {v}" for k, v in NORMS.items()),
    )
    sc.add_argument(
        "--allow-missing",
        action="store_true",
        help="score an ability that lacks predictions for some items, counting those wrong "
        "(default: its score is null)",
    )
    sc.set_defaults(func=cmd_score)
    _add_bench(sub)
    return p


def _add_bench(sub) -> None:
    from doit.eval.public_bench import benchmark_list, shot_list

    be = sub.add_parser("bench", help="CMMLU / AGIEval / C-Eval via lm-eval; write BENCH.json")
    be.add_argument(
        "--model", required=True, help="model directory (full model or the adapter's base)"
    )
    be.add_argument("--adapter", help="PEFT adapter directory")
    be.add_argument(
        "--tasks",
        type=benchmark_list,
        default=["cmmlu", "agieval", "ceval"],
        help="comma-separated: cmmlu,agieval,ceval (default: all three)",
    )
    be.add_argument(
        "--data-dir",
        required=True,
        help="folder holding cmmlu/, agieval/, ceval/ in their distributed formats",
    )
    be.add_argument(
        "--shots", type=shot_list, default=[0, 5], help="comma-separated, 0..5 (default 0,5)"
    )
    be.add_argument("--out", required=True)
    be.add_argument(
        "--overwrite", action="store_true", help="replace an existing --out of another kind"
    )
    be.add_argument("--batch-size", type=at_least(1), default=16)
    be.add_argument("--dtype", choices=["auto", "bf16", "fp16", "fp32"], default="auto")
    be.set_defaults(func=cmd_bench)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (DataError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
