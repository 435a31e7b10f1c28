"""Write a study's results table and per-item rows as gzip-compressed CSV (the same
bytes for the same rows), a staged cell's earlier stages included, so the study can be re-analysed
without retraining (`gunzip -k`, then `doit analysis run DIR/results.csv`).

    python studies/curriculum_micro/tables.py STUDY OUT_DIR PREFIX
"""

from __future__ import annotations

import sys
from pathlib import Path

from doit.grid.results import read_items, read_results
from doit.io import atomic_write_gzip_text


def main(study: str, out: str, prefix: str) -> None:
    tables = (("", read_results(study, stages=True)), (".items", read_items(study, stages=True)))
    for suffix, table in tables:
        if table is None:
            continue
        atomic_write_gzip_text(Path(out) / f"{prefix}{suffix}.csv.gz", table.to_csv(index=False))


if __name__ == "__main__":
    main(*sys.argv[1:4])
