"""Paired bootstrap of the selected scores: replicate counts of correct items per grid point.

A *grid point* is a cell without its seed (base, construction, mix, n, excluded ability); its
seeds are pooled. The scored items are those of ``splits`` (default the test split; a study with
few items pools valid and test, as the micro study does: items of different splits are distinct
items). Each replicate

1. resamples, per point with >= 2 seeds, its seeds with replacement (seeds first), then
2. resamples one set of item ids per ability, shared by every cell (the same items appear in
   every cell, so differences between cells are paired), and counts each cell's correct
   answers among the drawn items.

Without per-item rows each cell is redrawn as Binomial(n_items, score / 100) instead: no
pairing, and ``Counts.method`` says so.

Scores, paired differences and macros are read only through ``Counts``' methods (``score``,
``scores``, ``pooled``, ``difference``, ``macro``, ``tally`` for a binomial fit), each an
``Estimate`` (point and replicates) whose ``interval`` is the one interval rule of the analysis:
the bias-corrected percentile bootstrap interval (``interval``, ``intervals`` over columns), 95%
(``LEVEL``, ``Z``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import norm

from doit.data import macro as macro_rule

POINT = ["base", "params", "construction", "mix", "n_per_ability", "n_total", "excluded_ability"]
REPLICATES = 1000  # bootstrap replicates unless asked otherwise (every analysis command's default)
PAIRED, BINOMIAL = "paired item bootstrap", "binomial resampling of each cell (no per-item rows)"


LEVEL = 0.95  # every interval of the analysis is a 95% interval


def z_score(level: float = LEVEL) -> float:
    """The standard normal quantile of a two-sided ``level`` interval (1.96 for 95%)."""
    return float(norm.ppf((1 + level) / 2))


Z = z_score()


def interval(
    point: float, reps, level: float = LEVEL, method: str = "linear"
) -> tuple[float, float]:
    """The analysis's one interval rule, the bias-corrected percentile bootstrap interval: the
    percentiles are shifted by the share of replicates below the point estimate (z0), which
    removes the median bias a nonlinear fit gives plain percentile intervals. NaN replicates
    are left out; (NaN, NaN) without a point or replicates. ``method``: numpy's percentile
    method (``inverted_cdf`` for replicates that may be infinite)."""
    if reps is None or np.isnan(point):
        return np.nan, np.nan
    reps = np.asarray(reps, float)
    reps = reps[~np.isnan(reps)]
    if len(reps) == 0:
        return np.nan, np.nan
    below = (np.mean(reps < point) + np.mean(reps <= point)) / 2
    z0 = norm.ppf(np.clip(below, 1 / len(reps), 1 - 1 / len(reps)))
    z = z_score(level)
    q = norm.cdf([2 * z0 - z, 2 * z0 + z]) * 100
    lo, hi = np.percentile(reps, q, method=method)
    return float(lo), float(hi)


def intervals(points, reps, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """``interval`` for every column: ``points`` (n,) and ``reps`` (R, n) give (lo, hi), each
    (n,); ``reps`` None gives NaN bounds."""
    points = np.atleast_1d(np.asarray(points, float))
    lo, hi = np.full(points.shape, np.nan), np.full(points.shape, np.nan)
    if reps is None:
        return lo, hi
    reps = np.asarray(reps, float).reshape(-1, points.size)
    for j, point in enumerate(points):
        lo[j], hi[j] = interval(point, reps[:, j], level)
    return lo, hi


def percent(correct, items):
    """A score in points: ``correct`` of ``items`` as 0-100 (arrays elementwise)."""
    return 100 * correct / items


@dataclass(frozen=True)
class Estimate:
    """A score or a difference in points: ``point`` and its bootstrap ``reps`` (R,) (for
    several points at once: (n,) and (R, n)); ``reps`` None when there are none."""

    point: float | np.ndarray
    reps: np.ndarray | None

    def interval(self, level: float = LEVEL):
        """Its 95% interval (``interval``; per point for several: ``intervals``)."""
        if np.ndim(self.point) == 0:
            return interval(float(self.point), self.reps, level)
        return intervals(self.point, self.reps, level)

    def ci(self) -> tuple[float, float, float]:
        """(point, lo, hi) of a single estimate."""
        return (float(self.point), *self.interval())

    def total(self) -> Estimate:
        """The sum over several points' estimates (point and each replicate)."""
        reps = None if self.reps is None else self.reps.sum(1)
        return Estimate(float(np.sum(self.point)), reps)

    def minus(self, other: Estimate) -> Estimate:
        """This estimate minus ``other``, replicate by replicate: paired when both come from
        one ``Counts`` (the same draws)."""
        reps = None if self.reps is None or other.reps is None else self.reps - other.reps
        return Estimate(self.point - other.point, reps)


@dataclass(frozen=True)
class Tally:
    """Points' correct answers of their items, seeds pooled (n,), and per replicate (R, n):
    what a binomial fit takes."""

    correct: np.ndarray
    items: np.ndarray
    correct_reps: np.ndarray
    items_reps: np.ndarray


@dataclass
class Counts:
    """``points``: one row per (grid point, ability) over the scored splits, with the pooled
    ``k`` correct of ``m`` items, ``score`` (= 100 k / m), ``chance`` and ``seeds``;
    ``k``/``m``: (replicates, points) arrays, column i for row i of ``points``."""

    points: pd.DataFrame
    k: np.ndarray
    m: np.ndarray
    method: str

    @property
    def replicates(self) -> int:
        return self.k.shape[0]

    def column(self, ability: str, **where) -> int:
        """The index of the one point of ``ability`` whose columns equal ``where``
        (e.g. ``base="s", n_per_ability=256``); KeyError naming it when there is none."""
        pts = self.points
        mask = pts["ability"] == ability
        for key, value in where.items():
            mask &= pts[key] == value
        found = np.flatnonzero(mask.fillna(False).to_numpy(dtype=bool))
        if len(found) != 1:
            what = ", ".join(f"{k}={v}" for k, v in {"ability": ability, **where}.items())
            raise KeyError(f"{what} ({len(found)} points)")
        return int(found[0])

    def score(self, column: int) -> Estimate:
        """Point ``column``'s score and its replicate scores."""
        return Estimate(float(self.points["score"].iloc[column]), self._rep_scores(column))

    def scores(self, columns) -> Estimate:
        """The scores of several points, (n,) and (R, n)."""
        columns = np.asarray(columns, int)
        return Estimate(self.points["score"].to_numpy(float)[columns], self._rep_scores(columns))

    def pooled(self, columns) -> Estimate:
        """Several points scored as one: their correct answers over their items."""
        columns = np.asarray(columns, int)
        k, m = (self.points[c].iloc[columns].sum() for c in ("k", "m"))
        return Estimate(
            percent(k, m), percent(self.k[:, columns].sum(1), self.m[:, columns].sum(1))
        )

    def difference(self, a, b) -> Estimate:
        """The paired difference score(a) - score(b): the same item (and seed) draws on both
        sides. ``a``, ``b``: two points, or equal-length arrays of points (pair by pair)."""
        point = self.points["score"].to_numpy(float)
        reps = 100 * (self.k[:, a] / self.m[:, a] - self.k[:, b] / self.m[:, b])
        return Estimate(point[a] - point[b], reps)

    def macro(self, by_ability: Mapping[str, Estimate], expected: Iterable[str]):
        """The mean of per-ability estimates (scores or differences) over the in-domain
        abilities of ``expected``, in registry order; None when one of them is missing
        (``doit.data.macro``'s rule)."""
        return mean_over(by_ability, macro_rule.in_domain(expected))

    def tally(self, columns) -> Tally:
        """The points' correct answers and items, point and per replicate."""
        columns = np.asarray(columns, int)
        pts = self.points.iloc[columns]
        return Tally(
            pts["k"].to_numpy(float),
            pts["m"].to_numpy(float),
            self.k[:, columns],
            self.m[:, columns],
        )

    def items(self, column: int) -> int:
        """The items point ``column`` scored (seeds pooled)."""
        return int(self.points["m"].iloc[column])

    def _rep_scores(self, columns) -> np.ndarray:
        return percent(self.k[:, columns], self.m[:, columns])


def mean_over(by_key: Mapping[str, Estimate], keys: Iterable[str]) -> Estimate | None:
    """The mean of estimates over ``keys`` (in that order), point and replicate by replicate;
    None when one of them is missing (``doit.data.macro``'s completeness rule)."""
    keys = tuple(keys)
    if not macro_rule.complete(by_key, keys):
        return None
    parts = [by_key[k] for k in keys]
    reps = None if any(p.reps is None for p in parts) else np.mean([p.reps for p in parts], 0)
    return Estimate(float(np.mean([p.point for p in parts])), reps)


def bootstrap_counts(
    selected: pd.DataFrame,
    items: pd.DataFrame | None = None,
    replicates: int = REPLICATES,
    seed: int = 0,
    splits: tuple[str, ...] = ("test",),
) -> Counts:
    rng = np.random.default_rng(seed)
    splits = (splits,) if isinstance(splits, str) else tuple(splits)
    rows = selected[selected["split"].isin(splits) & selected["n_items"].notna()].copy()
    rows = rows[rows["n_items"] > 0]
    paired, method = items is not None and len(items) > 0, BINOMIAL
    if paired:
        lacking = _without_items(rows, items, splits)
        if lacking:
            paired = False
            method = (
                f"binomial resampling of each cell (per-item rows missing for {lacking} "
                "of the selected cells)"
            )
    if not paired:  # a null score (items without a prediction) has no count to redraw
        rows = rows[rows["score"].notna()]
    rows = _pool_splits(rows)
    rows["point"] = _point_ids(rows)
    parts, kk, mm = [], [], []
    for ability, block in rows.groupby("ability", sort=True):
        block = block.sort_values(["point", "seed", "cell"], ignore_index=True)
        if paired:
            k_cell, m_cell, k0, m0 = _paired(block, items, ability, splits, replicates, rng)
        else:
            k_cell, m_cell, k0, m0 = _binomial(block, replicates, rng)
        pts, k, m = _pool_seeds(block, k_cell, m_cell, k0, m0, rng)
        parts.append(pts)
        kk.append(k)
        mm.append(m)
    if not parts:
        raise ValueError(f"no scored {' or '.join(map(repr, splits))} rows to analyse")
    points = pd.concat(parts, ignore_index=True)
    return Counts(points, np.hstack(kk), np.hstack(mm), PAIRED if paired else method)


def _pool_splits(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (cell, epoch, ability): ``n_items`` and the correct count ``k_items``
    (from ``score``) summed over the scored splits."""
    rows = rows.assign(k_items=np.round(rows["score"].astype(float) / 100 * rows["n_items"]))
    if not rows.duplicated(["cell", "epoch", "ability"]).any():
        return rows
    keys = ["cell", "epoch", "ability"]
    sums = rows.groupby(keys, sort=False)[["n_items", "k_items"]].sum(min_count=1)
    first = rows.drop(columns=["n_items", "k_items"]).drop_duplicates(keys)
    return first.merge(sums.reset_index(), on=keys, how="left")


def _without_items(rows: pd.DataFrame, items: pd.DataFrame, splits: tuple[str, ...]) -> int:
    """How many selected cells lack per-item rows for some split and ability they have a
    score for."""
    keys = ["cell", "epoch", "split", "ability"]
    have = items.loc[items["split"].isin(splits), keys].drop_duplicates()
    types = {"cell": "string", "split": "string", "ability": "string", "epoch": float}
    merged = rows[keys].astype(types).merge(have.astype(types), on=keys, how="left", indicator=True)
    return int(merged.loc[merged["_merge"] == "left_only", "cell"].nunique())


def _point_ids(rows: pd.DataFrame) -> pd.Series:
    return rows.groupby(POINT, dropna=False, sort=True).ngroup()


def _paired(block, items, ability, splits, replicates, rng):
    """Per cell: (R, cells) correct counts and items scored under shared item draws."""
    mine = items[(items["ability"] == ability) & items["split"].isin(splits)]
    keys = block[["cell", "epoch"]].assign(row=np.arange(len(block)))
    mine = mine.merge(keys, on=["cell", "epoch"], how="inner")
    codes = mine.groupby(["split", "type", "idx"], sort=True).ngroup().to_numpy()
    n = int(codes.max()) + 1 if len(codes) else 0
    correct = np.zeros((len(block), n))
    present = np.zeros((len(block), n))
    rows = mine["row"].to_numpy()
    correct[rows, codes] = mine["correct"].fillna(False).to_numpy(dtype=float)
    present[rows, codes] = 1.0
    missing = present.sum(1) == 0
    if missing.any():
        cells = ", ".join(block.loc[missing, "cell"].astype(str)[:3])
        raise ValueError(f"per-item rows are missing for {ability} in cell(s) {cells}")
    draws = rng.integers(0, n, size=(replicates, n)) + n * np.arange(replicates)[:, None]
    weights = np.bincount(draws.ravel(), minlength=replicates * n).reshape(replicates, n)
    return weights @ correct.T, weights @ present.T, correct.sum(1), present.sum(1)


def _binomial(block, replicates, rng):
    m0 = block["n_items"].to_numpy(dtype=float)
    k0 = block["k_items"].to_numpy(dtype=float, na_value=0.0)
    k = rng.binomial(m0.astype(int), k0 / m0, size=(replicates, len(m0))).astype(float)
    return k, np.broadcast_to(m0, k.shape).copy(), k0, m0


def _pool_seeds(block, k_cell, m_cell, k0, m0, rng):
    """Sum each point's seeds, resampling seeds with replacement per replicate (>= 2 seeds)."""
    replicates = k_cell.shape[0]
    groups = list(block.groupby("point", sort=True).indices.values())
    columns = [*POINT, "ability", "arch"]
    firsts = block.iloc[[idx[0] for idx in groups]]  # a point's columns, nulls kept as pd.NA
    firsts = [
        dict(zip(columns, row)) for row in zip(*(firsts[c].to_numpy(object) for c in columns))
    ]
    chance = block["chance"].astype(float)
    cells = block["cell"].astype(str).to_numpy()
    means, k, m, seeds, names, ks, ms = [], [], [], [], [], [], []
    for idx in groups:
        if len(idx) >= 2:
            w = rng.multinomial(len(idx), np.full(len(idx), 1 / len(idx)), size=replicates)
        else:
            w = np.ones((replicates, 1))
        ks.append((w * k_cell[:, idx]).sum(1))
        ms.append((w * m_cell[:, idx]).sum(1))
        means.append(chance.iloc[idx].mean())
        k.append(k0[idx].sum())
        m.append(m0[idx].sum())
        seeds.append(len(idx))
        names.append(",".join(cells[idx]))
    out = [
        {**row, "chance": c, "k": k_, "m": m_, "score": percent(k_, m_), "seeds": n, "cells": cs}
        for row, c, k_, m_, n, cs in zip(firsts, means, k, m, seeds, names)
    ]
    return pd.DataFrame(out), np.column_stack(ks), np.column_stack(ms)
