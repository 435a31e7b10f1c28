"""The text formulation's ranking normalisations compared on a micro study's valid split.

    python studies/micro_study/norms.py runs/study/micro_text [--out studies/micro_study/text]

Every computation is ``doit.analysis.formulation.compare_norms``' (the stored predictions judged
again under each normalisation, one paired item bootstrap over every cell, 95% CIs); this
prints the table and, with ``--out``, writes ``norms.csv``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from doit.analysis.formulation import compare_norms
from doit.io import atomic_write_text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("study", type=Path)
    p.add_argument("--out", type=Path)
    p.add_argument("--replicates", type=int, default=2000)
    args = p.parse_args(argv)
    table = compare_norms(args.study, splits=("valid",), replicates=args.replicates).round(2)
    print(table.to_string(index=False))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out / "norms.csv", table.to_csv(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
