"""The micro study's scores, valid and test pooled, and its targets checked on them.

    python studies/micro_study/targets.py runs/study/micro [--data data/generated/micro] [--out DIR]
        [--targets letter|text]

``--targets letter``: issue #12's (the letter formulation); ``text``: issue #21's.

Reads a study folder written by ``python -m doit.grid run``; every computation is
``doit.analysis.targets``' (last epoch, valid and test pooled, paired item bootstrap with
bias-corrected 95% CIs). Prints the ability x (base, n) table and each target with its
numbers; ``--out`` also writes ``scores.csv`` and ``targets.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from doit.analysis import targets
from doit.io import atomic_write_text, read_json


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("study", type=Path)
    p.add_argument("--data", type=Path, default=Path("data/generated/micro"))
    p.add_argument("--small", default="vanilla_xs")
    p.add_argument("--large", default="vanilla_s")
    p.add_argument("--lo-n", "--lo_n", type=int, default=4)
    p.add_argument("--hi-n", "--hi_n", type=int, default=256)
    p.add_argument("--out", type=Path)
    p.add_argument("--replicates", type=int, default=targets.REPLICATES)
    p.add_argument("--targets", choices=tuple(targets.SETS), default="letter")
    args = p.parse_args(argv)
    truth = read_json(args.data / "ground_truth.json")["abilities"]
    counts = targets.micro_scores(args.study, args.replicates)
    table = targets.score_table(counts, truth)
    checks = targets.check_targets(
        counts, truth, args.small, args.large, args.lo_n, args.hi_n, args.targets
    )
    text = targets.markdown(table, checks)
    print(text, end="")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out / "scores.csv", table.to_csv(index=False))
        atomic_write_text(args.out / "targets.md", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
