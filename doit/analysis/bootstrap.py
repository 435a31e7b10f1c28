"""Paired bootstrap of the selected test scores: replicate counts of correct items per grid point.

A *grid point* is a cell without its seed (base, construction, mix, n, excluded ability); its
seeds are pooled. Each replicate

1. resamples, per point with >= 2 seeds, its seeds with replacement (seeds first), then
2. resamples one set of test item ids per ability, shared by every cell (the same items
   appear in every cell, so differences between cells are paired), and counts each cell's
   correct answers among the drawn items.

Without per-item rows each cell is redrawn as Binomial(n_items, score / 100) instead: no
pairing, and ``Counts.method`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

POINT = ["base", "params", "construction", "mix", "n_per_ability", "n_total", "excluded_ability"]
PAIRED, BINOMIAL = "paired item bootstrap", "binomial resampling of each cell (no per-item rows)"


@dataclass
class Counts:
    """``points``: one row per (grid point, ability) on the test split, with the pooled
    ``k`` correct of ``m`` items, ``score`` (= 100 k / m), ``chance`` and ``seeds``;
    ``k``/``m``: (replicates, points) arrays, column i for row i of ``points``."""

    points: pd.DataFrame
    k: np.ndarray
    m: np.ndarray
    method: str

    @property
    def replicates(self) -> int:
        return self.k.shape[0]


def bootstrap_counts(
    selected: pd.DataFrame,
    items: pd.DataFrame | None = None,
    replicates: int = 1000,
    seed: int = 0,
    split: str = "test",
) -> Counts:
    rng = np.random.default_rng(seed)
    rows = selected[(selected["split"] == split) & selected["n_items"].notna()].copy()
    rows = rows[rows["n_items"] > 0]
    paired, method = items is not None and len(items) > 0, BINOMIAL
    if paired:
        lacking = _without_items(rows, items, split)
        if lacking:
            paired = False
            method = (f"binomial resampling of each cell (per-item rows missing for {lacking} "
                      "of the selected cells)")  # fmt: skip
    if not paired:  # a null score (items without a prediction) has no count to redraw
        rows = rows[rows["score"].notna()]
    rows["point"] = _point_ids(rows)
    parts, kk, mm = [], [], []
    for ability, block in rows.groupby("ability", sort=True):
        block = block.sort_values(["point", "seed", "cell"], ignore_index=True)
        if paired:
            k_cell, m_cell, k0, m0 = _paired(block, items, ability, split, replicates, rng)
        else:
            k_cell, m_cell, k0, m0 = _binomial(block, replicates, rng)
        pts, k, m = _pool_seeds(block, k_cell, m_cell, k0, m0, rng)
        parts.append(pts)
        kk.append(k)
        mm.append(m)
    if not parts:
        raise ValueError(f"no scored {split!r} rows to analyse")
    points = pd.concat(parts, ignore_index=True)
    return Counts(points, np.hstack(kk), np.hstack(mm), PAIRED if paired else method)


def _without_items(rows: pd.DataFrame, items: pd.DataFrame, split: str) -> int:
    """How many selected cells lack per-item rows for some ability they have a score for."""
    keys = ["cell", "epoch", "ability"]
    have = items.loc[items["split"] == split, keys].drop_duplicates()
    have = have.astype({"cell": "string", "ability": "string", "epoch": float})
    want = rows[keys].astype({"cell": "string", "ability": "string", "epoch": float})
    merged = want.merge(have, on=keys, how="left", indicator=True)
    return int(merged.loc[merged["_merge"] == "left_only", "cell"].nunique())


def _point_ids(rows: pd.DataFrame) -> pd.Series:
    return rows.groupby(POINT, dropna=False, sort=True).ngroup()


def _paired(block, items, ability, split, replicates, rng):
    """Per cell: (R, cells) correct counts and items scored under shared item draws."""
    mine = items[(items["ability"] == ability) & (items["split"] == split)]
    keys = block[["cell", "epoch"]].assign(row=np.arange(len(block)))
    mine = mine.merge(keys, on=["cell", "epoch"], how="inner")
    codes = mine.groupby(["type", "idx"], sort=True).ngroup().to_numpy()
    n = int(codes.max()) + 1 if len(codes) else 0
    correct = np.zeros((len(block), n))
    present = np.zeros((len(block), n))
    rows = mine["row"].to_numpy()
    correct[rows, codes] = mine["correct"].fillna(False).to_numpy(dtype=float)
    present[rows, codes] = 1.0
    missing = present.sum(1) == 0
    if missing.any():
        cells = ", ".join(block.loc[missing, "cell"].astype(str)[:3])
        raise ValueError(f"per-item rows are missing for {ability} {split} in cell(s) {cells}")
    draws = rng.integers(0, n, size=(replicates, n)) + n * np.arange(replicates)[:, None]
    weights = np.bincount(draws.ravel(), minlength=replicates * n).reshape(replicates, n)
    return weights @ correct.T, weights @ present.T, correct.sum(1), present.sum(1)


def _binomial(block, replicates, rng):
    m0 = block["n_items"].to_numpy(dtype=float)
    k0 = np.round(block["score"].to_numpy(dtype=float, na_value=0.0) / 100 * m0)
    k = rng.binomial(m0.astype(int), k0 / m0, size=(replicates, len(m0))).astype(float)
    return k, np.broadcast_to(m0, k.shape).copy(), k0, m0


def _pool_seeds(block, k_cell, m_cell, k0, m0, rng):
    """Sum each point's seeds, resampling seeds with replacement per replicate (>= 2 seeds)."""
    replicates = k_cell.shape[0]
    out, ks, ms = [], [], []
    for _, idx in block.groupby("point", sort=True).indices.items():
        first = block.iloc[idx[0]]
        if len(idx) >= 2:
            w = rng.multinomial(len(idx), np.full(len(idx), 1 / len(idx)), size=replicates)
        else:
            w = np.ones((replicates, 1))
        ks.append((w * k_cell[:, idx]).sum(1))
        ms.append((w * m_cell[:, idx]).sum(1))
        row = {c: first[c] for c in [*POINT, "ability", "arch"]}
        k, m = k0[idx].sum(), m0[idx].sum()
        chance = block.iloc[idx]["chance"].astype(float).mean()
        out.append({**row, "chance": chance, "k": k, "m": m, "score": 100 * k / m,
                    "seeds": len(idx), "cells": ",".join(block.iloc[idx]["cell"].astype(str))})  # fmt: skip
    return pd.DataFrame(out), np.column_stack(ks), np.column_stack(ms)
