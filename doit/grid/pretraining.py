"""The pretraining table: one row per finished pretraining cell (what the base ladder compares).

The runner writes a pretraining cell's row once its base is DONE, from DONE's "end" row
(`doit.train.pretrain`), atomically: ``STUDY/pretraining/<cell>.parquet``; the row, written
last, is what marks the cell done. `read_pretraining` gathers and validates the rows (or reads
one table file); `write_csv` writes ``STUDY/pretraining.csv``, for people (at the end of
``run``). The columns are the old ``ladder.jsonl``'s, and what ``doit.analysis.ladder`` reads.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from doit.io import atomic_path, inside

PRETRAINING_DIR = "pretraining"
# column -> dtype (numpy's: every finished run records them all; unigram_loss is NaN if not)
COLUMNS = {
    "cell": "str",  # the pretraining cell's id (doit.grid.plan)
    "base": "str",  # the base's name in the grid
    "arch": "str",  # the run's architecture: vanilla | resformer | resformer_learnable | svformer
    "size": "str",  # the config's size label (xs | s | m | l | custom)
    "seed": "int64",  # the pretraining seed (initial weights; the block order unless data_seed)
    "params_non_embedding": "int64",  # non-embedding parameters
    "params_total": "int64",  # all parameters, embeddings included
    "valid_loss": "float64",  # the final validation loss (nats per token)
    "tokens": "int64",  # training tokens seen (steps x tokens per step)
    "wall_s": "float64",  # the run's wall seconds (its end row)
    "unigram_loss": "float64",  # min(unigram_entropy, unigram_valid_loss): the unigram baseline
}
END_KEYS = tuple(COLUMNS)[2:-1]  # taken from DONE's end row as they are


class PretrainingError(ValueError):
    """A pretraining table that breaks the schema; the message names the file and the column."""


def row(cell_id: str, base: str, end: dict) -> dict:
    """A pretraining cell's row from its base's DONE ("end" row)."""
    unigram = [end[k] for k in ("unigram_entropy", "unigram_valid_loss") if end.get(k) is not None]
    return {
        "cell": cell_id,
        "base": base,
        **{k: end.get(k) for k in END_KEYS},
        "unigram_loss": min(unigram) if unigram else math.nan,
    }


def shard_path(study, cell_id: str) -> Path:
    """Where a cell's row lies: inside the table's folder, or OutputError (never written)."""
    folder = Path(study) / PRETRAINING_DIR
    return inside(folder, folder / f"{cell_id}.parquet")


def write_row(study, r: dict) -> Path:
    path = shard_path(study, r["cell"])
    df = _validate(pd.DataFrame([r]), f"the row of {r['cell']}")
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)
    return path


def read_pretraining(path) -> pd.DataFrame:
    """The pretraining table of a study folder (its rows gathered) or of a ``.csv``/``.parquet``
    file: every column present (an error names the missing ones and the file) and of its type,
    one row per cell; sorted by cell."""
    path = Path(path)
    if path.is_dir():
        shards = sorted((path / PRETRAINING_DIR).glob("*.parquet"))
        parts = [_validate(pd.read_parquet(p), str(p)) for p in shards]
        df = (
            pd.concat(parts, ignore_index=True)
            if parts
            else _validate(pd.DataFrame(columns=list(COLUMNS)), str(path))
        )
    elif path.suffix in (".csv", ".parquet") and path.is_file():
        read = pd.read_csv if path.suffix == ".csv" else pd.read_parquet
        df = _validate(read(path), str(path))
    else:
        raise PretrainingError(
            f"{path}: no such study folder or pretraining table (.csv, .parquet)"
        )
    dup = df["cell"].duplicated(keep=False)
    if dup.any():
        raise PretrainingError(f"{path}: cell {df.loc[dup, 'cell'].iloc[0]} has several rows")
    return df.sort_values("cell", ignore_index=True)


def _validate(df: pd.DataFrame, source: str) -> pd.DataFrame:
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise PretrainingError(f"{source}: missing column(s): {', '.join(missing)}")
    try:
        return df[list(COLUMNS)].astype(COLUMNS)
    except (TypeError, ValueError) as e:
        raise PretrainingError(f"{source}: a column does not hold its type: {e}") from None


def write_csv(study) -> Path:
    """``STUDY/pretraining.csv``: the gathered table, for people (atomically)."""
    path = Path(study) / "pretraining.csv"
    with atomic_path(path) as tmp:
        read_pretraining(study).to_csv(tmp, index=False)
    return path
