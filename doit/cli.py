"""The `doit` command: one front door to every stage (``python -m doit`` is the same).

    doit data micro --out data/generated/micro      the corpus model (= python -m doit.data)
    doit pretrain --config recipes/configs/pretrain/xs.yaml --output_dir runs/base
    doit sft --config recipes/configs/sft/micro/full.yaml ...   fine-tuning (= recipes/sft.py)
    doit eval predict|score|bench ...               evaluation (= python -m doit.eval)
    doit analysis run STUDY --out DIR               scaling analysis (= python -m doit.analysis)
    doit analysis ladder RUNS --out DIR             the base ladder's loss vs size (make ladder)
    doit analysis curriculum STUDY --budget N --out DIR   a data mix per ability from the fits
    doit grid plan|run|status|table ...             a scaling study, or the base ladder
                                                    (recipes/grids/ladder.yaml; = python -m doit.grid)

``doit COMMAND --help`` lists a command's options.
"""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "data": ("doit.data.cli", "validate, stats, split, curate, subset, mix, micro"),
    "pretrain": ("doit.train.pretrain", "train a base from scratch (a grid's pretraining cells)"),
    "sft": ("doit.train.sft", "fine-tune a base on a DoIT cell, subset or mix"),
    "eval": ("doit.eval.cli", "predict, score, and public benchmarks"),
    "analysis": ("doit.analysis.cli", "scaling fits, features, predictions, report, curriculum"),
    "grid": ("doit.grid.cli", "plan, run and watch a scaling study (recipes/grids/*.yaml)"),
}


def usage() -> str:
    rows = "\n".join(f"  {name:<9} {what}" for name, (_, what) in COMMANDS.items())
    return f"usage: doit COMMAND [ARGS...]\n\ncommands:\n{rows}\n\n`doit COMMAND --help` for more."


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"doit: unknown command {name!r}\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return module.main(rest)


def entry() -> None:
    """The console script: multi-rank launches end through `doit.train.launch.exit_process`."""
    from doit.train.launch import exit_process

    exit_process(main())
