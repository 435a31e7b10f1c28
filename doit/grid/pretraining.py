"""The pretraining table: one row per finished pretraining run (what the base ladder compares).

The runner writes a pretraining cell's row once its base is DONE, from DONE's "end" row
(`doit.train.pretrain`), atomically: ``STUDY/pretraining/<cell>.parquet``; the row, written
last, is what marks the cell done. `read_pretraining` gathers and validates the rows (or reads
one table file, or the end rows of a folder of pretraining runs); `write_csv` writes
``STUDY/pretraining.csv``, for people (at the end of ``run``). ``COLUMNS`` is the one schema of
a pretraining run's row and `row` the one rule that makes it (the unigram baseline included):
``doit.analysis.ladder`` reads nothing else.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd

from doit.io import atomic_path, inside
from doit.train import rundir

PRETRAINING_DIR = "pretraining"
# column -> dtype (numpy's: every finished run records them all; unigram_loss is NaN if not)
COLUMNS = {
    "cell": "str",  # the pretraining cell's id (doit.grid.plan); read from a run folder: its path
    "base": "str",  # the base's name in the grid; read from a run folder: the folder above it
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
OPTIONAL = ("unigram_loss",)  # the columns that may be null (older runs did not record them)
RUNS = "*/seed*/" + rundir.METRICS  # a folder of pretraining runs: <base>/seed<k>/metrics.jsonl
KIND_WORD = {"str": "text", "int64": "an integer", "float64": "a number"}  # for errors
LOG = logging.getLogger(__name__)


class PretrainingError(ValueError):
    """A pretraining table that breaks the schema; the message names the file and the column."""


def row(cell_id: str, base: str, end: dict) -> dict:
    """A pretraining run's row from its "end" row (a base's DONE, or its metrics.jsonl's)."""
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
    """The pretraining table of a study folder (its rows gathered), of a folder of pretraining
    runs (``RUNS``, e.g. a base ladder's bases_dir: each run's last end row, unfinished runs
    logged and left out) or of a ``.csv``/``.parquet`` file: every column present (an error
    names the missing ones and the file) and of its type (an error names the file, the CSV
    line and the column), one row per cell; sorted by cell."""
    path = Path(path)
    if path.is_dir() and not _is_study(path) and any(path.glob(RUNS)):
        df = _read_runs(path)
    elif path.is_dir():
        shards = sorted((path / PRETRAINING_DIR).glob("*.parquet"))
        parts = [_validate(pd.read_parquet(p), str(p)) for p in shards]
        df = (
            pd.concat(parts, ignore_index=True)
            if parts
            else _validate(pd.DataFrame(columns=list(COLUMNS)), str(path))
        )
    elif path.suffix == ".csv" and path.is_file():
        text = {c: str for c, dtype in COLUMNS.items() if dtype == "str"}
        df = _validate(pd.read_csv(path, dtype=text), str(path), first_line=2)
    elif path.suffix == ".parquet" and path.is_file():
        df = _validate(pd.read_parquet(path), str(path))
    else:
        raise PretrainingError(
            f"{path}: no such study folder, folder of pretraining runs ({RUNS}) or "
            "pretraining table (.csv, .parquet)"
        )
    dup = df["cell"].duplicated(keep=False)
    if dup.any():
        raise PretrainingError(f"{path}: cell {df.loc[dup, 'cell'].iloc[0]} has several rows")
    return df.sort_values("cell", ignore_index=True)


def _is_study(folder: Path) -> bool:
    return (folder / PRETRAINING_DIR).is_dir() or (folder / "plan.json").is_file()


def _read_runs(folder: Path) -> pd.DataFrame:
    """One row per finished run of a folder of runs: the cell is the run's folder, the base
    the folder above it (``<base>/seed<k>``)."""
    parts = []
    for metrics in sorted(folder.glob(RUNS)):
        run = metrics.parent
        ends = [r for r in rundir.read_metrics(run) if r["kind"] == "end"]
        if not ends:
            LOG.warning("warning: %s is unfinished (no end row); left out", run)
            continue
        parts.append(_validate(pd.DataFrame([row(str(run), run.parent.name, ends[-1])]), metrics))
    if not parts:
        raise PretrainingError(f"{folder}: no finished run (a {RUNS} with an end row)")
    return pd.concat(parts, ignore_index=True)


def _validate(df: pd.DataFrame, source, first_line: int | None = None) -> pd.DataFrame:
    """``df`` in the schema; PretrainingError naming ``source`` (with the line of row i,
    ``first_line`` + i, when it is a CSV) and the column of the first missing or bad value."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise PretrainingError(f"{source}: missing column(s): {', '.join(missing)}")
    columns = {}
    for column, dtype in COLUMNS.items():
        raw = df[column].reset_index(drop=True)
        values = raw if dtype == "str" else pd.to_numeric(raw, errors="coerce")
        bad = values.isna() & (raw.notna() | (column not in OPTIONAL))
        if dtype == "int64":
            bad |= values.notna() & (values % 1 != 0)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            where = f"{source}:{first_line + i}" if first_line else f"{source}: row {i + 1}"
            what = (
                "empty" if pd.isna(raw.iloc[i]) else f"not {KIND_WORD[dtype]}: {raw.tolist()[i]!r}"
            )
            raise PretrainingError(f"{where}: column {column!r} is {what}")
        columns[column] = values
    return pd.DataFrame(columns).astype(COLUMNS)


def write_csv(study) -> Path:
    """``STUDY/pretraining.csv``: the gathered table, for people (atomically)."""
    path = Path(study) / "pretraining.csv"
    with atomic_path(path) as tmp:
        read_pretraining(study).to_csv(tmp, index=False)
    return path
