"""The results table: the study runner's contract with the analysis (schemas in README.md).

Each finished cell writes its rows as shards of its own, atomically (temporary file, then
rename): ``STUDY/results/<cell>.parquet`` (one row per cell, epoch, split, ability, formulation) and
``STUDY/items/<cell>.parquet`` (one row per cell, epoch, split, ability, formulation, type,
idx). The items
shard is written first; the results shard, written last, is what marks the cell done, so a
runner killed between the two rewrites both. ``read_results`` gathers the shards (or reads
one table file) and validates the schema; ``read_items`` the per-item rows beside them (a
table file's sibling ``STEM.items.SUFFIX``); ``write_csv`` writes the whole table for people.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from doit.data.kinds import FORMULATIONS, LETTER
from doit.io import atomic_path, inside

RESULTS_DIR, ITEMS_DIR = "results", "items"
CONSTRUCTIONS = ("curated", "synthetic", "mix", "base")
# column -> pandas dtype; the required columns (the analysis reads these names) come first.
REQUIRED = {
    "cell": "string",  # the cell's stable id (doit.grid.plan)
    "base": "string",  # the base's name in the grid
    "arch": "string",  # llama | vanilla | resformer | svformer | ...
    "params": "Int64",  # non-embedding parameters of the base
    "construction": "string",  # curated | synthetic | mix | base (n = 0, untuned)
    "mix": "string",  # the mix's name (mix cells), else null
    "n_per_ability": "Int64",  # n of a uniform or leave-one-out cell; 0 for base; null for mixes
    "n_total": "Int64",  # training items of the cell
    "seed": "Int64",  # training seed
    "epoch": "Float64",  # the scored checkpoint's epoch (0 for base cells)
    "step": "Int64",  # its optimiser step
    "split": "string",  # valid | test | a public benchmark's name
    "ability": "string",  # ability key (C-Eval sets on test: ceval_*)
    "score": "Float64",  # 0-100; null when items lacked a prediction
    "n_items": "Int64",  # items scored
    "chance": "Float64",  # 0-100, the ability's chance score on this split
}
EXTRA = {
    "excluded_ability": "string",  # the left-out ability of a leave-one-out cell, else null
    "params_total": "Int64",  # all parameters, embeddings included
    "sample_seed": "Int64",  # seed of the data draw
    "n_own": "Int64",  # this ability's training items
    "tokens_own": "Float64",  # this ability's assistant tokens trained up to this checkpoint
    "tokens_total": "Float64",  # all assistant tokens trained up to this checkpoint
    "schedule": "string",  # epochs | steps
    "valid_loss": "Float64",  # this ability's validation loss at this step (metrics.jsonl)
    "run_dir": "string",  # the training run's directory, relative to the study folder
    "data_manifest_sha": "string",  # sha256 of the training items (doit.train.sft.data)
    "n_no_output": "Int64",  # items that got no output (prompt longer than the context): wrong
    "train_s": "Float64",  # wall seconds the cell's training took (this session's)
    "eval_s": "Float64",  # wall seconds this checkpoint's evaluation took
    "formulation": "string",  # letter | text: how this row's items were asked and scored
    "cell_formulation": "string",  # the cell's own: how it trained (n = 0: its grid axis value)
    "stage": "Int64",  # a staged cell's stage whose final model the row scores (1..K); else null
}
COLUMNS = {**REQUIRED, **EXTRA}
KEY = ("cell", "stage", "epoch", "split", "ability", "formulation")
ITEM_COLUMNS = {
    "cell": "string",
    "epoch": "Float64",
    "split": "string",
    "ability": "string",
    "type": "string",  # the item's type (file stem), as in the data
    "idx": "Int64",  # the item's idx within its type
    "answer_kind": "string",  # mc | tf | multiselect | cloze | math | open | mc_text | ...
    "correct": "boolean",  # the scoring rule's verdict (missing predictions: false)
    "formulation": "string",  # letter | text: how the item was asked and scored
}
ITEM_EXTRA = {
    "cluster": "string",  # optional: items sharing it rest on one fact (the micro corpus's)
    "stage": "Int64",  # as the results table's
}
ITEM_ALL = {**ITEM_COLUMNS, **ITEM_EXTRA}
ITEM_KEY = ("cell", "stage", "epoch", "split", "ability", "formulation", "type", "idx")
TIMING = ("train_s", "eval_s")  # differ between identical runs; everything else must not


class ResultsError(ValueError):
    """A results table that breaks the schema; the message names the file and the column."""


def frame(rows: list[dict], per_item: bool = False) -> pd.DataFrame:
    """``rows`` as a table in the schema's column order and dtypes (unknown keys are errors)."""
    columns = ITEM_ALL if per_item else COLUMNS
    unknown = sorted({k for r in rows for k in r} - set(columns))
    if unknown:
        raise ResultsError(f"unknown results column(s): {', '.join(unknown)}")
    df = pd.DataFrame(rows, columns=list(columns))
    return df.astype(columns)


def write_shard(study: Path, cell: str, df: pd.DataFrame, per_item: bool = False) -> Path:
    """One cell's rows as ``STUDY/results|items/<cell>.parquet``, atomically."""
    path = shard_path(study, cell, per_item)
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)
    return path


def shard_path(study: Path, cell: str, per_item: bool = False) -> Path:
    """Where a cell's shard lies: inside its table's folder, or OutputError (never written)."""
    folder = Path(study) / (ITEMS_DIR if per_item else RESULTS_DIR)
    return inside(folder, folder / f"{cell}.parquet")


def read_results(path, per_item: bool = False, stages: bool = False) -> pd.DataFrame:
    """The results table (or, ``per_item``, the per-item rows) of a study folder or a table file.

    A study folder's shards are gathered; a ``.csv`` or ``.parquet`` file is read as it is.
    Required columns must be present (an error names the missing ones and the file), optional
    columns are added as nulls (``formulation`` and ``cell_formulation`` as letter, the only
    formulation before there were others), dtypes follow the schema, and a repeated key is an
    error. Every row is its cell's, the final model's: a staged cell's rows of its earlier
    stages (``stage`` below the cell's last, scored for forgetting) come only with ``stages``.
    """
    path = Path(path)
    if path.is_dir():
        shards = sorted((path / (ITEMS_DIR if per_item else RESULTS_DIR)).glob("*.parquet"))
        parts = [_read_table(p) for p in shards]
        source = str(path)
        parts = [_validate(p, str(s), per_item) for p, s in zip(parts, shards)]
        df = pd.concat(parts, ignore_index=True) if parts else frame([], per_item)
    elif path.is_file():
        source = str(path)
        df = _validate(_read_table(path), source, per_item)
    else:
        raise ResultsError(f"{path}: no such study folder or results table")
    key = list(ITEM_KEY if per_item else KEY)
    dup = df.duplicated(key, keep=False)
    if dup.any():
        first = df.loc[dup, key].iloc[0].to_dict()
        raise ResultsError(
            f"{source}: {int(dup.sum())} rows repeat a key ({', '.join(key)}), e.g. {first}"
        )
    return df.sort_values(key, ignore_index=True) if stages else final_rows(df, key)


def final_rows(df: pd.DataFrame, key) -> pd.DataFrame:
    """``df`` less a staged cell's earlier stages' rows, sorted by ``key``."""
    return df[~earlier_stage(df)].sort_values(key, ignore_index=True)


def earlier_stage(df: pd.DataFrame) -> np.ndarray:
    """Which rows of ``df`` (results or per-item rows) are a staged cell's earlier stages':
    ``stage`` below the largest its cell has."""
    stage = df["stage"]
    last = stage.groupby(df["cell"]).transform("max")
    return (stage.notna() & (stage < last)).to_numpy(dtype=bool)


def items_path(path) -> Path | None:
    """Where the per-item rows of a study or table lie: a study folder's ``items/``, or beside
    a table file ``STEM.items.SUFFIX`` (``results.items.parquet`` beside ``results.parquet``);
    None when there are none."""
    path = Path(path)
    if path.is_dir():
        return path if any((path / ITEMS_DIR).glob("*.parquet")) else None
    sibling = path.with_name(path.stem + ".items" + path.suffix)
    return sibling if path.is_file() and sibling.is_file() else None


def read_items(path, stages: bool = False) -> pd.DataFrame | None:
    """The per-item rows of a study folder or of a table file (`items_path`), validated as
    `read_results` validates them (``stages`` likewise); None when it has none."""
    where = items_path(path)
    return None if where is None else read_results(where, per_item=True, stages=stages)


def _read_table(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    if path.suffix == ".csv":
        return read_csv(path)
    raise ResultsError(f"{path}: a results table is a .csv or .parquet file")


def read_csv(path) -> pd.DataFrame:
    """A CSV table; an empty file or one that is not UTF-8 is a ResultsError naming it."""
    try:
        return pd.read_csv(path, keep_default_na=True, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise ResultsError(f"{path}: empty file (not even a header row)") from None
    except UnicodeDecodeError as e:
        raise ResultsError(f"{path}: not UTF-8 text (byte {e.start}: {e.reason})") from None
    except pd.errors.ParserError as e:
        raise ResultsError(f"{path}: not a CSV table: {e}") from None


COUNTS = ("params", "n_per_ability", "n_total", "step", "n_items", "n_own", "n_no_output")


def _validate(df: pd.DataFrame, source: str, per_item: bool) -> pd.DataFrame:
    required = ITEM_COLUMNS if per_item else REQUIRED
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise ResultsError(f"{source}: missing required column(s): {', '.join(missing)}")
    columns = ITEM_ALL if per_item else COLUMNS
    for c in columns:
        if c not in df.columns:
            df[c] = pd.NA
    for c in ("formulation", "cell_formulation"):  # tables from before formulations: letter
        if c in columns:
            df[c] = df[c].astype("string").fillna(LETTER)
    extra = [c for c in df.columns if c not in columns]
    try:
        df = df[list(columns) + extra].astype(columns)
    except (TypeError, ValueError) as e:
        raise ResultsError(f"{source}: a column does not hold its schema type: {e}") from None
    if not per_item:
        _check_values(df, source)
    return df


def _check_values(df: pd.DataFrame, source: str) -> None:
    allowed = {
        "construction": CONSTRUCTIONS,
        "formulation": FORMULATIONS,
        "cell_formulation": FORMULATIONS,
    }
    for col, values in allowed.items():
        bad = ~df[col].isin(values) & df[col].notna()
        if bad.any():
            raise ResultsError(
                f"{source}: {col}: {df.loc[bad, col].iloc[0]!r} is not one of {', '.join(values)}"
            )
    for col in COUNTS:
        negative = df[col].notna() & (df[col] < 0)
        if negative.any():
            i = int(negative.to_numpy().nonzero()[0][0])
            raise ResultsError(f"{source}: {col}: {df[col].iloc[i]} (row {i + 1}) is negative")
    for col in ("score", "chance"):
        out = df[col].notna() & ((df[col] < 0) | (df[col] > 100))
        if out.any():
            raise ResultsError(f"{source}: {col}: {df.loc[out, col].iloc[0]} is outside 0-100")


def write_csv(study: Path) -> Path:
    """``STUDY/results.csv``: the gathered table, for people (atomically)."""
    path = Path(study) / "results.csv"
    with atomic_path(path) as tmp:
        read_results(study).to_csv(tmp, index=False)
    return path
