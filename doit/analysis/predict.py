"""Fit on part of the grid, predict the rest: the largest base from the smaller ones, and the
largest n from the smaller ones, per ability, with 95% prediction intervals.

The interval combines the fit's bootstrap replicates (each with its own form choice) with the
held-out cell's own noise (``Counts.redraw``): a replicate's prediction p_r, moved by its
seeds' mean seed draw where the study has a seed component (bootstrap.py), gives a draw
Binomial(m, p_r) / m for the held-out cell's m items, and the interval is the analysis's
bias-corrected percentile interval of those draws around the prediction. Errors are reported in the terms of the
model-ladder work on task scaling laws (Bhagia et al., 2024: four tasks of 7B/13B models within
2 points from small models, 6.9 points on average on harder tasks).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from doit.analysis.bootstrap import Counts, interval
from doit.analysis.fits import fit_series, same_n_rows, untuned_floor

LADDER_WITHIN, LADDER_HARD_MAE = 2.0, 6.9  # Bhagia et al. (2024)
COLUMNS = [
    "holdout",
    "ability",
    "base",
    "params",
    "n",
    "observed",
    "predicted",
    "lo",
    "hi",
    "abs_error",
    "covered",
    "form",
    "fit_points",
]


def predictions(counts: Counts, seed: int = 0) -> pd.DataFrame:
    """predictions.csv: one row per held-out cell (holdout, ability, base, n)."""
    rng = np.random.default_rng(seed)
    pts = counts.points
    grid = pts[same_n_rows(pts)]
    rows = []
    for _, block in grid.groupby(["ability", "n_per_ability"], sort=True):
        rows += _holdout(counts, block, "params", 2.0, "largest_base", rng)
    for _, block in grid.groupby(["ability", "base"], sort=True):
        rows += _holdout(counts, block, "n_per_ability", 4.0, "largest_n", rng)
    return pd.DataFrame(rows, columns=COLUMNS)


def _holdout(counts, block, column, log_base, name, rng) -> list[dict]:
    x = block[column].to_numpy(dtype=float)
    if len(np.unique(x)) < 3:  # two points to fit, one to predict
        return []
    target = x == x.max()
    train, test = block.index[~target].to_numpy(), block.index[target].to_numpy()
    tr, t = counts.points.loc[train], counts.tally(train)
    chance = float(tr["chance"].mean()) / 100
    floor = None  # the size axis: the chance prior; the data axis: the base's untuned cell
    if column == "n_per_ability":
        floor = untuned_floor(counts, tr["ability"].iloc[0], tr["base"].iloc[0])
    fit = fit_series(
        tr[column], t.correct, t.items, chance, t.correct_reps, t.items_reps, log_base, floor
    )
    out = []
    for i in test:
        row = counts.points.loc[i]
        point, reps = fit.curve([row[column]])
        draws = counts.redraw(i, reps[:, 0], rng)
        lo, hi = interval(float(point[0]), draws)
        observed = float(row["score"])
        out.append(
            {
                "holdout": name,
                "ability": row["ability"],
                "base": row["base"],
                "params": int(row["params"]),
                "n": int(row["n_per_ability"]),
                "observed": observed,
                "predicted": float(point[0]),
                "lo": float(lo),
                "hi": float(hi),
                "abs_error": abs(float(point[0]) - observed),
                "covered": bool(lo <= observed <= hi),
                "form": fit.chosen,
                "fit_points": fit.n_points,
            }
        )
    return out


def summary(pred: pd.DataFrame) -> pd.DataFrame:
    """Per holdout and ability: mean absolute error, the share within 2 points, coverage."""
    if pred.empty:
        return pd.DataFrame(columns=["holdout", "ability", "cells", "mae", "within_2", "coverage"])
    g = pred.groupby(["holdout", "ability"], sort=True)
    out = g.agg(
        cells=("abs_error", "size"),
        mae=("abs_error", "mean"),
        within_2=("abs_error", lambda e: float(np.mean(e <= LADDER_WITHIN))),
        coverage=("covered", "mean"),
    )
    return out.reset_index()
