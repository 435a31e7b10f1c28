"""The whole `python -m doit.analysis run` on a paper-sized synthetic study: 10 abilities x 3
bases x 6 n x 100 test items, per-item rows, 1,000 bootstrap replicates. Budget: < 30 s on
the 2-core development machine.

    .venv/bin/python bench/analysis.py [--replicates 1000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from doit.analysis.cli import main  # noqa: E402
from doit.analysis.synthetic import BASES, Curve, planted_study  # noqa: E402
from doit.data.abilities import ABILITY_KEYS  # noqa: E402
from doit.grid.results import write_shard  # noqa: E402


def paper_sized(folder: Path) -> None:
    curves = {
        a: Curve(a=-1.5 + 0.2 * i, b_data=0.1 * (i % 5), b_size=0.05 * (i % 4))
        for i, a in enumerate(ABILITY_KEYS)
    }
    table, items, _ = planted_study(curves, bases=BASES, n_items=100, rng=0)
    for cell, df in table.groupby("cell"):
        write_shard(folder, cell, df)
    for cell, df in items.groupby("cell"):
        write_shard(folder, cell, df, per_item=True)


def run() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--replicates", type=int, default=1000)
    p.add_argument("--keep", type=Path, help="write the study and the analysis here")
    args = p.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="doit-bench-analysis-"))
    paper_sized(root / "study")
    start = time.perf_counter()
    rc = main(
        [
            "run",
            str(root / "study"),
            "--out",
            str(root / "analysis"),
            "--replicates",
            str(args.replicates),
        ]
    )
    took = time.perf_counter() - start
    print(
        f"analysis run: {took:.1f} s ({args.replicates} replicates, 10 abilities x 3 bases x "
        f"6 n x 100 items, per-item rows); budget 30 s: {'ok' if took < 30 else 'OVER'}"
    )
    return rc


if __name__ == "__main__":
    sys.exit(run())
