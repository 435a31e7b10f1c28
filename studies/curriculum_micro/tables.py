"""Write a study's results table and per-item rows as gzip-compressed CSV (no name, mtime 0:
reproducible), a staged cell's earlier stages included, so the study can be re-analysed
without retraining (`gunzip -k`, then `doit analysis run DIR/results.csv`).

    python studies/curriculum_micro/tables.py STUDY OUT_DIR PREFIX
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

from doit.grid.results import read_items, read_results
from doit.io import atomic_path


def main(study: str, out: str, prefix: str) -> None:
    tables = (("", read_results(study, stages=True)), (".items", read_items(study, stages=True)))
    for suffix, table in tables:
        if table is None:
            continue
        with atomic_path(Path(out) / f"{prefix}{suffix}.csv.gz") as tmp, open(tmp, "wb") as fh:
            with gzip.GzipFile(filename="", fileobj=fh, mode="wb", mtime=0) as f:
                f.write(table.to_csv(index=False).encode())


if __name__ == "__main__":
    main(*sys.argv[1:4])
