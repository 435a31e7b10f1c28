"""Paired bootstrap of the selected scores: replicate counts of correct items per grid point.

A *grid point* is a cell without its seed (base, construction, mix, n, excluded ability); its
seeds are pooled. The scored items are those of ``splits`` (default the test split; a study with
few items pools valid and test, as the micro study does: items of different splits are distinct
items). Each replicate

1. resamples one set of item ids per ability, shared by every cell (the same items appear in
   every cell, so differences between cells are paired), and counts each cell's correct
   answers among the drawn items; where per-item rows carry a ``cluster`` (held-out items
   that rest on one fact, as the micro corpus's knowledge items do), it resamples clusters
   instead, each drawn cluster with all its items (clustered standard errors; items
   without one are clusters of one, and a table without clusters is drawn as before), then
2. gives every trained cell a training-seed effect: its replicate score moves by a draw of
   the ability's seed component on the logit scale (below), the same standard-normal draw for
   a cell's every ability (``seed_corr`` below 1: that draw mixed with one of the ability's
   own at that correlation, `correlated`; micro runs measured about 0.05,
   doit/analysis/README.md); an untuned base, n = 0, has no training seed and no draw. A point
   with s seeds pools its s cells, so it gets the mean of s draws; a paired difference of two
   cells gets both cells' draws. Seeds are not resampled (two seeds resampled with replacement
   halve their variance).

Without per-item rows each cell is redrawn as Binomial(n_items, score / 100) instead: no
pairing, and ``Counts.method`` says so.

**The seed component** (``SeedComponent``, one per ability; ``Counts.seed_table``): the SD of
a training seed's effect on the logit of a cell's score (logit units; the scale of
``seed_sd``). A seed effect u moves a score p by about p (1 - p) u. At every point with s >= 2
seeds, on the items all its seeds scored (m of them): B, the seeds' score variance (ddof 1),
is the seed part (p (1 - p))^2 sd^2 plus the item-outcome part W = sum_i v_i / m^2, v_i the
variance of item i's 0/1 outcomes over the seeds (ddof 1: within an item, so the items'
spread of difficulty is not counted as noise); without per-item rows W = mean p (1 - p) /
(m - 1), the binomial one. Pooled over the ability's points with weights s - 1 (method of
moments, truncated at 0): sd^2 = max(T - N, 0), T = sum (s-1) B / sum (s-1) (p (1-p))^2, N the
same sum of W, on df = sum (s - 1) degrees of freedom. Its uncertainty: each replicate draws
its own T_r = T df / chi2_df (the scaled-inverse-chi-square spread of a variance estimated on
df degrees of freedom) and moves its cells with sd_r = sqrt(max(T_r - N, 0)); ``seed_sd_lo``
/ ``_hi`` are the interval of those. No point with >= 2 seeds: the prior ``seed_sd`` when given
(every replicate's sd_r), else none (intervals cover item sampling only). ``Counts.resamples``
says which: ``ITEMS``, ``SEEDS`` or ``prior_phrase(seed_sd)``. A planted or latent seed effect
on items' logits shows up smaller on this scale where items differ in difficulty or scores
have a floor and a ceiling below 1; the estimate and its use share the scale, and a prior
measured by this estimator on another study transfers.

Scores, paired differences and macros are read only through ``Counts``' methods (``score``,
``scores``, ``pooled``, ``difference``, ``macro``, ``tally`` for a binomial fit), each an
``Estimate`` (point and replicates) whose ``interval`` is the one interval rule of the analysis:
the bias-corrected percentile bootstrap interval (``interval``, ``intervals`` over columns), 95%
(``LEVEL``, ``Z``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit, logit
from scipy.stats import norm

from doit.data import macro as macro_rule
from doit.stats.power import LEVEL, Z, z_score  # noqa: F401  (the interval level's owner)
from doit.stats.variance import item_matrix, item_moments, pooled_seed_variance

POINT = ["base", "params", "construction", "mix", "n_per_ability", "n_total", "excluded_ability"]
REPLICATES = 1000  # bootstrap replicates unless asked otherwise (every analysis command's default)
PAIRED, BINOMIAL = "paired item bootstrap", "binomial resampling of each cell (no per-item rows)"
ITEMS, SEEDS = "items", "items and seeds"  # what an interval resamples (Counts.resamples)
SEED_STREAM = 29  # the seed effects' own random stream: the item draws stay those of `seed`
TRAINED = "trained_cell"  # optional: the training a row's cell scores (one seed draw per training)


def prior_phrase(seed_sd: float) -> str:
    """What an interval resamples when the seed component is the prior ``seed_sd``."""
    return f"items and a seed prior (seed_sd={seed_sd:g})"


MEDIAN_NOISE = Z  # z0 counts a median bias beyond this many SEs of its share (`interval`)


def interval(
    point: float, reps, level: float = LEVEL, method: str = "linear"
) -> tuple[float, float]:
    """The analysis's one interval rule, the bias-corrected percentile bootstrap interval: the
    percentiles are shifted by the share of replicates below the point estimate (z0), which
    removes the median bias a nonlinear fit gives plain percentile intervals. That share is
    itself a Monte Carlo estimate: its departure from 1/2 counts only beyond its own noise
    (``MEDIAN_NOISE`` standard errors of a share of R replicates, soft-thresholded), so an
    unbiased fit gets the plain percentile interval rather than one shifted at random (at
    200 replicates the shift cost the size axis 1.2 points of coverage: README, "Coverage").
    NaN replicates are left out; (NaN, NaN) without a point or replicates. ``method``: numpy's
    percentile method (``inverted_cdf`` for replicates that may be infinite)."""
    if reps is None or np.isnan(point):
        return np.nan, np.nan
    reps = np.asarray(reps, float)
    reps = reps[~np.isnan(reps)]
    if len(reps) == 0:
        return np.nan, np.nan
    below = (np.mean(reps < point) + np.mean(reps <= point)) / 2
    noise = MEDIAN_NOISE * 0.5 / np.sqrt(len(reps))  # the share's SE when the median is the point
    below = 0.5 + np.sign(below - 0.5) * max(abs(below - 0.5) - noise, 0.0)
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


def recounted(table: pd.DataFrame, items: pd.DataFrame, split: str) -> pd.DataFrame:
    """``table`` (results rows) with its ``split`` rows' ``score`` and ``n_items`` counted on
    the per-item rows ``items`` (a subset of the study's: the curriculum's cross-fit halves);
    rows of other splits, and rows without items there, as they were."""
    keys = ["cell", "epoch", "split", "ability"]
    tally = items[items["split"] == split].groupby(keys, sort=False)["correct"]
    counted = pd.DataFrame({"correct": tally.sum(), "items": tally.size()}).reset_index()
    types = {"cell": "string", "split": "string", "ability": "string", "epoch": float}
    merged = table.astype(types).merge(counted.astype(types), how="left", on=keys)
    out = table.copy()
    has = (merged["split"] == split).to_numpy() & merged["items"].notna().to_numpy()
    found = merged.loc[has]
    out.loc[has, "n_items"] = found["items"].to_numpy()
    out.loc[has, "score"] = percent(found["correct"].to_numpy(float), found["items"].to_numpy())
    return out


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


SEED_COLUMNS = ["ability", "seed_sd", "seed_sd_lo", "seed_sd_hi", "seed_df", "seed_points"]
SEED_COLUMNS += ["resamples"]


@dataclass(frozen=True)
class SeedComponent:
    """An ability's training-seed SD in item-logit units: ``sd`` (the estimate or the prior),
    ``reps`` (R,) the SD each replicate draws with, on ``df`` degrees of freedom from
    ``points`` points of >= 2 seeds (module docstring)."""

    ability: str
    sd: float
    reps: np.ndarray
    df: int
    points: int
    resamples: str

    def row(self) -> dict:
        lo, hi = (np.nan, np.nan) if self.df == 0 else interval(self.sd, self.reps)
        values = (self.ability, self.sd, lo, hi, self.df, self.points)
        return dict(zip(SEED_COLUMNS, (*values, self.resamples)))


@dataclass
class Counts:
    """``points``: one row per (grid point, ability) over the scored splits, with the pooled
    ``k`` correct of ``m`` items, ``score`` (= 100 k / m), ``chance`` and ``seeds``;
    ``k``/``m``: (replicates, points) arrays, column i for row i of ``points``."""

    points: pd.DataFrame
    k: np.ndarray
    m: np.ndarray
    method: str
    seed_components: tuple[SeedComponent, ...] = ()
    seed_corr: float = 1.0  # the seed effects' correlation across a training's abilities

    @property
    def replicates(self) -> int:
        return self.k.shape[0]

    @property
    def resamples(self) -> str:
        """What an interval resamples: ``ITEMS``, ``SEEDS`` or ``prior_phrase(seed_sd)``;
        abilities that differ (some without a point of >= 2 seeds) are named."""
        said = {c.ability: c.resamples for c in self.seed_components}
        if not said:
            return ITEMS
        common = max(set(said.values()), key=list(said.values()).count)
        others = [f"{ability}: {what}" for ability, what in said.items() if what != common]
        if self.seed_corr < 1 and self.seed_drawn:
            others.append(f"seed effects correlated {self.seed_corr:g} across abilities")
        return common + (f" ({'; '.join(others)})" if others else "")

    @property
    def seed_drawn(self) -> bool:
        """Whether any ability's replicates move by seed draws (a seed component above 0,
        estimated or the prior)."""
        return any(np.any(c.reps) for c in self.seed_components)

    @property
    def seed_table(self) -> pd.DataFrame:
        """One row per ability: its seed component (module docstring) and its interval."""
        return pd.DataFrame([c.row() for c in self.seed_components], columns=SEED_COLUMNS)

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

    def redraw(self, column: int, scores, rng: np.random.Generator) -> np.ndarray:
        """A fresh observation of point ``column`` per replicate score (points) in ``scores``:
        its seeds' mean seed draw (its ability's component) on the logit scale, then
        Binomial(m, p) / m over its m items (a prediction interval's noise)."""
        p = np.clip(np.asarray(scores, float) / 100, 0, 1)
        sd = self._seed_reps(str(self.points["ability"].iloc[column]), len(p))
        if np.any(sd):
            seeds = int(self.points["seeds"].iloc[column])
            z = rng.standard_normal((len(p), seeds)).mean(1)
            p = expit(logit(np.clip(p, 1e-9, 1 - 1e-9)) + sd * z)
        m = self.items(column)
        return percent(rng.binomial(m, p), m)

    def _seed_reps(self, ability: str, replicates: int) -> np.ndarray:
        for c in self.seed_components:
            if c.ability == ability and len(c.reps) == replicates:
                return c.reps
        return np.zeros(replicates)

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
    seed_sd: float | None = None,
    seed_corr: float = 1.0,
) -> Counts:
    """The replicate counts of ``selected``'s points (module docstring); ``seed_sd``: the seed
    component's prior (item-logit SD) for abilities without a point of >= 2 seeds;
    ``seed_corr``: the correlation of a training's seed draws across its abilities."""
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
    effects = _CellDraws(_trainings(rows), replicates, [seed, SEED_STREAM], seed_corr)
    parts, kk, mm, components = [], [], [], []
    for ability, block in rows.groupby("ability", sort=True):
        block = block.sort_values(["point", "seed", "cell"], ignore_index=True)
        if paired:
            k_cell, m_cell, k0, m0, moments = _paired(
                block, items, ability, splits, replicates, rng
            )
        else:
            k_cell, m_cell, k0, m0 = _binomial(block, replicates, rng)
            moments = _binomial_moments(_seed_groups(block), k0, m0)
        component = seed_component(ability, moments, seed_sd, effects.rng, replicates)
        z = effects.of(_trainings(block), ability)
        shift = component.reps[:, None] * z
        pts, k, m = _pool_seeds(block, _moved(k_cell, m_cell, shift), m_cell, k0, m0)
        parts.append(pts)
        kk.append(k)
        mm.append(m)
        components.append(component)
    if not parts:
        raise ValueError(f"no scored {' or '.join(map(repr, splits))} rows to analyse")
    points = pd.concat(parts, ignore_index=True)
    method = PAIRED if paired else method
    return Counts(points, np.hstack(kk), np.hstack(mm), method, tuple(components), seed_corr)


def _trainings(rows: pd.DataFrame) -> pd.Series:
    """The training each row's cell scores (``TRAINED``, else its cell); None for an untuned
    base (n = 0: no training, no seed)."""
    trained = (rows[TRAINED] if TRAINED in rows else rows["cell"]).astype(str)
    return trained.where(rows["construction"].astype(str) != "base", None)


class _CellDraws:
    """One standard-normal seed draw per (replicate, training), shared by its abilities at
    correlation ``corr`` (1: the same draw for all; below 1, sqrt(corr) of it plus sqrt(1 -
    corr) of a draw of the ability's own, from a stream per ability); 0 for rows without a
    training (``_trainings``)."""

    def __init__(self, trainings: pd.Series, replicates: int, stream: list, corr: float = 1.0):
        names = sorted(trainings.dropna().unique())
        self.rng, self.stream, self.corr = np.random.default_rng(stream), stream, corr
        self.column = {name: j for j, name in enumerate(names)}
        self.z = self._padded(self.rng.standard_normal((replicates, len(names))))

    @staticmethod
    def _padded(z: np.ndarray) -> np.ndarray:
        return np.hstack([z, np.zeros((len(z), 1))])

    def of(self, trainings: pd.Series, ability: str) -> np.ndarray:
        columns = [self.column.get(t, -1) for t in trainings]
        if self.corr >= 1:
            return self.z[:, columns]
        own_rng = np.random.default_rng([*self.stream, zlib.crc32(ability.encode())])
        own = self._padded(own_rng.standard_normal(self.z[:, :-1].shape))
        return correlated(self.z[:, columns], own[:, columns], self.corr)


def correlated(shared: np.ndarray, own: np.ndarray, corr: float) -> np.ndarray:
    """Standard-normal seed draws correlated ``corr`` across abilities: sqrt(corr) of a
    training's shared draw plus sqrt(1 - corr) of each ability's own (the one rule for the
    bootstrap's cells and the curriculum's trained arms)."""
    return np.sqrt(corr) * shared + np.sqrt(1 - corr) * own


def seed_component(
    ability: str, moments: np.ndarray, prior: float | None, rng, replicates: int
) -> SeedComponent:
    """The ability's seed component from its points' moments (rows: s - 1, B, W, p (1 - p);
    module docstring), else the prior, else none."""
    total, noise, df = pooled_seed_variance(moments)
    if df == 0:
        sd = 0.0 if prior is None else float(prior)
        what = ITEMS if prior is None else prior_phrase(prior)
        return SeedComponent(ability, sd, np.full(replicates, sd), 0, 0, what)
    reps = np.sqrt(np.maximum(total * df / rng.chisquare(df, replicates) - noise, 0.0))
    sd = float(np.sqrt(max(total - noise, 0.0)))
    return SeedComponent(ability, sd, reps, df, len(moments), SEEDS)


def _moved(k: np.ndarray, m: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """Correct counts ``k`` of ``m`` items moved by ``shift`` on the logit scale of the score
    (smoothed by half an item; unmoved where the shift is 0), kept inside [0, m]."""
    if not np.any(shift):
        return k
    p = (k + 0.5) / (m + 1)
    return np.clip(k + m * (expit(logit(p) + shift) - p), 0, m)


def _seed_groups(block: pd.DataFrame) -> list[np.ndarray]:
    """The row indices of each point's cells, for points with >= 2 seeds."""
    return [idx for idx in block.groupby("point", sort=True).indices.values() if len(idx) >= 2]


def _binomial_moments(groups, k0: np.ndarray, m0: np.ndarray) -> np.ndarray:
    """``item_moments`` from the cells' counts alone (the binomial item-outcome variance)."""
    rows = []
    for idx in groups:
        p, m = k0[idx] / m0[idx], m0[idx]
        if m.min() >= 2:
            w = np.mean(p * (1 - p) / (m - 1))
            rows.append((len(idx) - 1, p.var(ddof=1), w, p.mean() * (1 - p.mean())))
    return np.array(rows, float).reshape(-1, 4)


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
    """Per cell: (R, cells) correct counts and items scored under shared item draws, the
    cells' counts, and the seed moments of the block's points (``item_moments``)."""
    mine = items[(items["ability"] == ability) & items["split"].isin(splits)]
    correct, present, clusters, _ = item_matrix(block, mine)
    missing = present.sum(1) == 0
    if missing.any():
        cells = ", ".join(block.loc[missing, "cell"].astype(str)[:3])
        raise ValueError(f"per-item rows are missing for {ability} in cell(s) {cells}")
    weights = _item_weights(clusters, replicates, rng)
    moments = item_moments(_seed_groups(block), correct, present)
    present = present.astype(float)
    return weights @ correct.T, weights @ present.T, correct.sum(1), present.sum(1), moments


def _item_weights(cluster: np.ndarray, replicates: int, rng) -> np.ndarray:
    """(R, n) how often each item is drawn: each replicate draws as many clusters as there are,
    with replacement, and takes every item of a drawn cluster (the cluster bootstrap; with one
    item per cluster the paired item bootstrap, draw for draw)."""
    c = int(cluster.max()) + 1 if len(cluster) else 0
    draws = rng.integers(0, c, size=(replicates, c)) + c * np.arange(replicates)[:, None]
    counts = np.bincount(draws.ravel(), minlength=replicates * c).reshape(replicates, c)
    return counts[:, cluster]


def _binomial(block, replicates, rng):
    m0 = block["n_items"].to_numpy(dtype=float)
    k0 = block["k_items"].to_numpy(dtype=float, na_value=0.0)
    k = rng.binomial(m0.astype(int), k0 / m0, size=(replicates, len(m0))).astype(float)
    return k, np.broadcast_to(m0, k.shape).copy(), k0, m0


def _pool_seeds(block, k_cell, m_cell, k0, m0):
    """Sum each point's seeds (every seed once: their variance is the seed draws')."""
    groups = list(block.groupby("point", sort=True).indices.values())
    columns = [*POINT, "ability", "arch"]
    firsts = block.iloc[[idx[0] for idx in groups]]  # a point's columns, nulls kept as pd.NA
    firsts = [
        dict(zip(columns, row)) for row in zip(*(firsts[c].to_numpy(object) for c in columns))
    ]
    chance = block["chance"].astype(float)
    cells = block["cell"].astype(str).to_numpy()
    out = [
        {
            **row,
            "chance": chance.iloc[idx].mean(),
            "k": k0[idx].sum(),
            "m": m0[idx].sum(),
            "score": percent(k0[idx].sum(), m0[idx].sum()),
            "seeds": len(idx),
            "cells": ",".join(cells[idx]),
        }
        for row, idx in zip(firsts, groups)
    ]
    k = np.column_stack([k_cell[:, idx].sum(1) for idx in groups])
    m = np.column_stack([m_cell[:, idx].sum(1) for idx in groups])
    return pd.DataFrame(out), k, m
