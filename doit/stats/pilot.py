"""The variance model's inputs measured on a pilot: a finished study of any size with per-item
rows (`doit grid plan --pilot`, `doit analysis design --pilot`).

Per ability, from its uniform trained cells (curated, no ability left out, n > 0), one row per
cell (the caller's checkpoint: the grid's planner takes each cell's last scored epoch, the
analysis its checkpoint rule):

- ``scores``: each grid point's mean score over its seeds, and ``score`` their mean;
- ``item_corr``: the mean correlation of two cells' 0/1 outcomes over the items every cell
  scored (`variance.item_correlation`), reported; the model pairs cells by
- ``difficulty_sd``: the items' logit difficulty SD that reproduces every pair of cells'
  outcome covariance (`variance.difficulty_sd`), so cells at close scores pair more than
  cells far apart (`variance.item_covariance`);
- ``seed_sd``: the bootstrap's seed component (`variance.item_moments`,
  `variance.pooled_seed_variance`) over the points with >= 2 seeds; a pilot without such a
  point takes the prior ``seed_sd`` and says so (``seed_source``);
- ``design_effect``: where the pilot's per-item rows carry a ``cluster`` shared by several items
  (the micro corpus's knowledge items ask one fact in several forms), the items' design effect
  measured on its cells (`variance.design_effect`); elsewhere the caller's value
  (``design_source``). Unpriced, the reference study's clustered abilities came out with
  predicted SEs of 0.36-0.68 of the measured ones (studies/power/README.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from doit.stats.variance import (
    SEED_SD_PRIOR,
    Inputs,
    difficulty_sd,
    item_correlation,
    item_matrix,
    item_moments,
    pooled_seed_variance,
)
from doit.stats.variance import design_effect as measured_design_effect


class PilotError(ValueError):
    """A pilot that cannot give the inputs: the message is one line naming it."""


def uniform_rows(rows: pd.DataFrame, split: str = "test") -> pd.DataFrame:
    """The trained uniform rows of ``split`` (curated, nothing left out, n > 0, scored)."""
    n = pd.to_numeric(rows["n_per_ability"], errors="coerce")
    keep = (
        (rows["split"] == split)
        & (rows["construction"] == "curated")
        & rows["excluded_ability"].isna()
        & (n > 0)
        & rows["score"].notna()
    )
    return rows[keep.fillna(False).to_numpy(bool)]


def last_epochs(rows: pd.DataFrame) -> pd.DataFrame:
    """Each cell's last scored epoch, in the cell's own formulation."""
    if {"formulation", "cell_formulation"} <= set(rows.columns):
        rows = rows[rows["formulation"] == rows["cell_formulation"]]
    last = rows.groupby("cell")["epoch"].transform("max")
    return rows[rows["epoch"] == last]


def pilot_inputs(
    rows: pd.DataFrame,
    items: pd.DataFrame | None,
    name: str,
    split: str = "test",
    seed_sd: float | None = None,
    design_effect: float = 1.0,
) -> dict[str, tuple[Inputs, dict]]:
    """ability -> (Inputs, what was measured: items, cells, seed_source, seed_df) from the
    pilot ``name``'s selected ``rows`` (one per cell and ability) and its per-item rows."""
    if items is None or not len(items):
        raise PilotError(f"pilot {name}: no per-item rows (items/); the pairing needs them")
    trained = uniform_rows(rows, split)
    if trained.empty:
        raise PilotError(f"pilot {name}: no trained uniform {split} rows (curated, n > 0)")
    mine = items[items["split"] == split]
    out = {}
    for ability, block in trained.groupby("ability", sort=True):
        block = block.reset_index(drop=True)
        correct, present, clusters = _item_matrix(
            block, mine[mine["ability"] == ability], name, ability
        )
        clustered = len(np.unique(clusters)) < len(clusters)
        shared = present.all(0)
        corr = item_correlation(correct[:, shared]) if shared.sum() >= 2 else np.nan
        guess = float(np.clip(block["chance"].astype(float).mean() / 100, 0.0, 0.9))
        guess = guess if np.isfinite(guess) else 0.0
        sigma = difficulty_sd(correct, present, guess)
        points = block.groupby(["base", "n_per_ability"], sort=True)
        groups = [idx for idx in points.indices.values() if len(idx) >= 2]
        total, noise, df = pooled_seed_variance(item_moments(groups, correct, present))
        measured = df > 0
        sd = float(np.sqrt(max(total - noise, 0.0))) if measured else seed_sd
        scores = {(b, int(n)): float(s) for (b, n), s in points["score"].mean().items()}
        inputs = Inputs(
            score=float(np.clip(np.mean(list(scores.values())), 0.5, 99.5)),
            item_corr=float(np.clip(np.nan_to_num(corr), 0.0, 0.99)),
            seed_sd=SEED_SD_PRIOR if sd is None else sd,
            design_effect=measured_design_effect(correct, present, clusters)
            if clustered
            else design_effect,
            scores=scores,
            difficulty_sd=float(sigma) if np.isfinite(sigma) else None,
            guess=guess,
        )
        out[ability] = (
            inputs,
            {
                "items": int(np.median(present.sum(1))),
                "cells": len(block),
                "seed_source": "pilot" if measured else "prior",
                "seed_df": df,
                "design_source": "pilot" if clustered else "given",
            },
        )
    return out


def _item_matrix(block: pd.DataFrame, items: pd.DataFrame, name: str, ability: str):
    """(correct, present, clusters): `variance.item_matrix` of ``block``'s cells at their
    rows' epochs; a PilotError when none of them has per-item rows."""
    correct, present, clusters, mine = item_matrix(block, items)
    if mine.empty:
        raise PilotError(f"pilot {name}: no per-item rows for {ability}'s trained cells")
    return correct, present, clusters
