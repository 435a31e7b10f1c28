"""The variance model of the analysis's estimands, before anything runs (issue #31).

The analysis (doit/analysis/README.md) measures each estimand on the paired item bootstrap
with a training-seed draw per cell (`doit.analysis.bootstrap`); this module gives the standard
error that bootstrap is expected to have, from the design alone, so a grid can be judged
before it trains (`doit grid plan`, `doit analysis design`). Same estimands, same scales:

- a **point** (a grid point: base x n, its seeds pooled) scored on m items at score p (0-1)
  has item variance p (1 - p) / m x deff (the bootstrap's: the variance of a mean over m
  resampled items; ``design_effect`` deff > 1 for clustered items, 1 for independent ones);
  s seeds on the same items pool to (1 + (s - 1) rho) / s of it. Two points share their items,
  so their item parts correlate: items have a difficulty every cell sees. Given the items'
  **difficulty SD** sigma (``difficulty_sd``: each item's logit offset d ~ N(0, sigma^2),
  shared by every cell; a cell scoring p answers it with probability sigmoid(eta + d), eta
  solving E[sigmoid(eta + d)] = p), two points' item outcomes covary by E[sigmoid(eta_a + d)
  sigmoid(eta_b + d)] - p_a p_b (`item_covariance`, Gauss-Hermite over d), so cells at close
  scores pair more than cells far apart. Without it (a prior) one ``item_corr`` rho for every
  pair: rho sqrt(v_a v_b). The pair-blind rho is the mean over the pilot's pairs, far-apart n
  included: it priced too little pairing for a size contrast of two bases at the same n (the
  power bench's design a: predicted SE 1.20x the empirical, measured 2026-12-07);
- a **seed** moves a cell's score by a draw of ``seed_sd`` on the logit of its score (the
  bootstrap's `SeedComponent`, the scale of ``--seed-sd``): (p (1 - p))^2 seed_sd^2 / s for a
  point of s seeds, independent between trainings, shared by a training's abilities;
- the **sensitivities** are linearised: the fit's end-point difference over the span of the
  series is, to first order, the slope of the binomially weighted least-squares line through
  the points (the delta method on the fit; exact for the log-linear form, the limit of every
  form on a flat stretch). So data_sensitivity (points per 4x n, mean over bases) and
  size_sensitivity (points per doubling, mean over n) are linear contrasts L of the point
  scores, and se = sqrt(L' S L) with S the points' covariance (above). A contrast's weights
  sum to 0, so pairing removes the share rho of the item variance;
- a **paired difference** of two points (a policy's mix vs uniform at one base and budget)
  has var = v_a + v_b - 2 rho sqrt(v_a v_b) + both seed parts; a **macro difference** is the
  mean over K abilities: item parts independent (other items), seed parts summed first (one
  draw per training moves all its abilities).

MDE and whether resistance is reachable come from `doit.stats.power.power(se, delta)`, the one
definition. The seed moments (`item_moments`, `pooled_seed_variance`) are the bootstrap's
estimator of the seed component, kept here so a planner's pilot and the analysis use one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

PER_4X, PER_DOUBLING = 4.0, 2.0  # the sensitivities' log bases (doit.analysis.sensitivity)
SCORE_PRIOR = 50.0  # points: the score level a prior plans at (the largest binomial variance)
ITEM_CORR_PRIOR = 0.0  # no pairing gain assumed without a pilot (conservative)
SEED_SD_PRIOR = 0.15  # logit: the micro models' measured value (doit/analysis/README.md)


@dataclass(frozen=True)
class Shape:
    """A design's shape: its bases (name -> non-embedding params), the trained n per ability
    (> 0; the untuned n = 0 cells are no point of either line), scored items per ability and
    training seeds per point."""

    bases: dict
    ns: tuple
    items: int
    seeds: int = 1

    @property
    def points(self) -> list[tuple[str, int]]:
        return [(b, n) for b in self.bases for n in self.ns]


@dataclass(frozen=True)
class Inputs:
    """One ability's variance inputs: its expected score (points; one level, or per point
    ``scores[(base, n)]``), the item correlation between cells, the training-seed SD (logit of
    a cell's score) and the items' design effect (clusters; 1: independent items)."""

    score: float = SCORE_PRIOR
    item_corr: float = ITEM_CORR_PRIOR
    seed_sd: float = SEED_SD_PRIOR
    design_effect: float = 1.0
    scores: dict = field(default_factory=dict)
    difficulty_sd: float | None = None  # logit; measured on a pilot: replaces item_corr
    guess: float = 0.0  # 0-1: the items' guessing floor (their chance) under difficulty_sd

    def at(self, point) -> float:
        """The expected score (0-1) of ``point`` (base, n)."""
        return float(self.scores.get(point, self.score)) / 100

    def check(self, ability: str) -> None:
        """A ValueError naming the ability and the input out of range."""
        for name, value, ok in (
            ("score", self.score, 0 < self.score < 100),
            ("item_corr", self.item_corr, 0 <= self.item_corr < 1),
            ("seed_sd", self.seed_sd, 0 <= self.seed_sd <= 5),
            ("design_effect", self.design_effect, self.design_effect >= 1),
        ):
            if not (np.isfinite(value) and ok):
                ranges = {
                    "score": "(0, 100) points",
                    "item_corr": "[0, 1)",
                    "seed_sd": "[0, 5] logit",
                    "design_effect": ">= 1",
                }
                raise ValueError(f"{ability}: {name} {value:g} is out of range {ranges[name]}")


def point_variances(p, items, seeds, inputs: Inputs) -> tuple[np.ndarray, np.ndarray]:
    """(item part, seed part) of each point's score variance, points^2; ``p`` 0-1."""
    p, seeds = np.asarray(p, float), np.asarray(seeds, float)
    rho = inputs.item_corr
    binomial = p * (1 - p) / items * inputs.design_effect * (1 + (seeds - 1) * rho) / seeds
    seed = (p * (1 - p) * inputs.seed_sd) ** 2 / seeds
    return 1e4 * binomial, 1e4 * seed


def covariance(p, items, seeds, inputs: Inputs) -> np.ndarray:
    """The points' score covariance (points^2): correlated item parts, independent seeds."""
    if inputs.difficulty_sd is not None:
        return _difficulty_covariance(p, items, seeds, inputs)
    item, seed = point_variances(p, items, seeds, inputs)
    sd = np.sqrt(item)
    cov = inputs.item_corr * np.outer(sd, sd)
    np.fill_diagonal(cov, item + seed)
    return cov


def _difficulty_covariance(p, items, seeds, inputs: Inputs) -> np.ndarray:
    """`covariance` from the items' difficulty SD: item outcomes covary by `item_covariance`;
    a point's s seeds on the same items pool to (p (1 - p) + (s - 1) c_pp) / s per item."""
    p, seeds = np.clip(np.asarray(p, float), 1e-4, 1 - 1e-4), np.asarray(seeds, float)
    c = item_covariance(p, inputs.difficulty_sd, inputs.guess)
    own = (p * (1 - p) + (seeds - 1) * np.diag(c)) / seeds
    cov = c.copy()
    np.fill_diagonal(cov, own)
    seed = (p * (1 - p) * inputs.seed_sd) ** 2 / seeds
    return 1e4 * (cov * inputs.design_effect / items + np.diag(seed))


_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(48)  # E over d ~ N(0, 1)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def item_covariance(p, sigma: float, guess: float = 0.0) -> np.ndarray:
    """The covariance of two cells' outcomes on one item (P x P), cells scoring ``p`` (0-1),
    items' logit difficulty d ~ N(0, ``sigma``^2) shared by every cell (module docstring),
    above a guessing floor ``guess`` (p = guess + (1 - guess) sigmoid(eta + d), IRT's 3PL)."""
    p = np.atleast_1d(np.asarray(p, float))
    above = np.clip((p - guess) / (1 - guess), 1e-4, 1 - 1e-4)
    s = _success(above, sigma)  # (P, nodes)
    joint = (s * _WEIGHTS) @ s.T
    mean = s @ _WEIGHTS
    return (1 - guess) ** 2 * (joint - np.outer(mean, mean))


def _success(p: np.ndarray, sigma: float) -> np.ndarray:
    """sigmoid(eta + sigma z) at the quadrature nodes z, eta solving the mean = ``p`` (P,)."""
    from scipy.special import expit, logit

    eta = logit(np.clip(p, 1e-6, 1 - 1e-6))
    for _ in range(60):  # Newton on E[sigmoid(eta + sigma z)] = p, monotone in eta
        s = expit(eta[:, None] + sigma * _NODES[None])
        f, df = s @ _WEIGHTS - p, (s * (1 - s)) @ _WEIGHTS
        step = f / np.maximum(df, 1e-12)
        eta = eta - np.clip(step, -2, 2)
        if np.all(np.abs(step) < 1e-10):
            break
    return expit(eta[:, None] + sigma * _NODES[None])


def difficulty_sd(correct: np.ndarray, present: np.ndarray, guess: float = 0.0) -> float:
    """The items' logit difficulty SD that makes `item_covariance` match the covariance of
    every pair of cells' outcomes over the items both scored (``correct``, ``present``: cells
    x items), by least squares over the pairs; NaN with fewer than two cells that vary."""
    from scipy.optimize import minimize_scalar

    y, seen = np.asarray(correct, float), np.asarray(present, bool)
    keep = [i for i in range(len(y)) if seen[i].sum() >= 2 and y[i][seen[i]].std() > 0]
    pairs = [(i, j) for a, i in enumerate(keep) for j in keep[a + 1 :]]
    obs, pa, pb = [], [], []
    for i, j in pairs:
        both = seen[i] & seen[j]
        if both.sum() < 2:
            continue
        a, b = y[i][both], y[j][both]
        obs.append(np.mean((a - a.mean()) * (b - b.mean())))
        pa.append(a.mean())
        pb.append(b.mean())
    if not obs:
        return np.nan
    obs, pa, pb = (np.array(v) for v in (obs, pa, pb))
    levels = np.clip((np.concatenate([pa, pb]) - guess) / (1 - guess), 1e-4, 1 - 1e-4)

    def loss(sigma):
        s = _success(levels, sigma)
        sa, sb = s[: len(pa)], s[len(pa) :]
        model = (sa * sb) @ _WEIGHTS - (sa @ _WEIGHTS) * (sb @ _WEIGHTS)
        return float(np.sum((obs - (1 - guess) ** 2 * model) ** 2))

    return float(minimize_scalar(loss, bounds=(0.0, 8.0), method="bounded").x)


def line_weights(x, p, items, seeds, per: float) -> np.ndarray:
    """The contrast giving a series' fitted slope (points per ``per``x of x): the binomially
    weighted least-squares line through scores ``p`` at ``x`` (the fit's weights: every
    scored item, seeds pooled)."""
    t = np.log(np.asarray(x, float)) / np.log(per)
    p = np.clip(np.asarray(p, float), 1e-3, 1 - 1e-3)
    w = items * np.asarray(seeds, float) / (p * (1 - p))
    centred = t - np.sum(w * t) / np.sum(w)
    return w * centred / np.sum(w * centred**2)


def _contrast_se(points, weights, shape: Shape, inputs: Inputs) -> float:
    p = np.array([inputs.at(pt) for pt in points])
    cov = covariance(p, shape.items, np.full(len(p), shape.seeds), inputs)
    return float(np.sqrt(max(weights @ cov @ weights, 0.0)))


def data_se(shape: Shape, inputs: Inputs) -> float:
    """The expected SE of data_sensitivity (points per 4x, mean over bases); NaN with < 2 n."""
    if len(shape.ns) < 2:
        return np.nan
    points, weights = shape.points, np.zeros(len(shape.points))
    for b in shape.bases:
        idx = [i for i, (base, _) in enumerate(points) if base == b]
        p = [inputs.at(points[i]) for i in idx]
        w = line_weights(shape.ns, p, shape.items, shape.seeds, PER_4X)
        weights[idx] = w / len(shape.bases)
    return _contrast_se(points, weights, shape, inputs)


def size_se(shape: Shape, inputs: Inputs) -> float:
    """The expected SE of size_sensitivity (points per doubling, mean over n); NaN with
    fewer than 2 bases."""
    if len(shape.bases) < 2:
        return np.nan
    points, weights = shape.points, np.zeros(len(shape.points))
    params = [shape.bases[b] for b in shape.bases]
    for n in shape.ns:
        idx = [i for i, (_, nn) in enumerate(points) if nn == n]
        p = [inputs.at(points[i]) for i in idx]
        w = line_weights(params, p, shape.items, shape.seeds, PER_DOUBLING)
        weights[idx] = w / len(shape.ns)
    return _contrast_se(points, weights, shape, inputs)


def difference_se(inputs: Inputs, items: int, seeds_a: int, seeds_b: int, p_a=None, p_b=None):
    """The expected SE of a paired difference of two points on the same ``items`` (points):
    scores ``p_a``, ``p_b`` (points; default the ability's level)."""
    p = np.array([inputs.score if p_a is None else p_a, inputs.score if p_b is None else p_b])
    cov = covariance(p / 100, items, np.array([seeds_a, seeds_b]), inputs)
    return float(np.sqrt(max(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1], 0.0)))


def macro_difference_se(by_ability: dict, items: int, seeds_a: int, seeds_b: int) -> float:
    """The expected SE of the difference of two points' macros (the mean over the abilities of
    ``by_ability``: ability -> Inputs): item parts independent across abilities, each
    training's one seed draw moving all its abilities."""
    k = len(by_ability)
    if not k:
        return np.nan
    item_var, seed_sum = 0.0, 0.0
    for inputs in by_ability.values():
        p = inputs.score / 100
        no_seed = replace(inputs, seed_sd=0.0, scores={})
        item_var += difference_se(no_seed, items, seeds_a, seeds_b) ** 2
        seed_sum += 100 * p * (1 - p) * inputs.seed_sd
    seed_var = seed_sum**2 * (1 / seeds_a + 1 / seeds_b)
    return float(np.sqrt(item_var + seed_var) / k)


def item_correlation(correct: np.ndarray) -> float:
    """The mean correlation of two cells' 0/1 outcomes over the same items (``correct``: cells
    x items); cells whose outcomes do not vary are left out; NaN with fewer than two."""
    y = np.asarray(correct, float)
    y = y[y.std(1) > 0]
    if len(y) < 2:
        return np.nan
    r = np.corrcoef(y)
    return float(r[~np.eye(len(y), dtype=bool)].mean())


def item_matrix(block: pd.DataFrame, items: pd.DataFrame):
    """(correct, present, clusters, matched): the cells x items outcomes of ``block``'s cells
    (a row per cell: its ``cell`` and ``epoch``) over ``items`` (one ability's per-item rows, of
    one split or several), items coded by (split, type, idx) in sorted order, whether each cell
    scored each item, each item's cluster (`item_clusters`), and the per-item rows matched
    (with ``row``: the cell's row in ``block``). The analysis's bootstrap and the planner's
    pilot read a study's items through this one matrix."""
    keys = block[["cell", "epoch"]].astype({"cell": str, "epoch": float})
    keys = keys.assign(row=np.arange(len(block)))
    mine = items.astype({"cell": str, "epoch": float}).merge(keys, on=["cell", "epoch"])
    codes = mine.groupby(["split", "type", "idx"], sort=True).ngroup().to_numpy()
    n = int(codes.max()) + 1 if len(codes) else 0
    correct = np.zeros((len(block), n))
    present = np.zeros((len(block), n), dtype=bool)
    rows = mine["row"].to_numpy()
    correct[rows, codes] = mine["correct"].fillna(False).to_numpy(dtype=float)
    present[rows, codes] = True
    return correct, present, item_clusters(mine, codes, n), mine


def item_clusters(mine: pd.DataFrame, codes: np.ndarray, n: int) -> np.ndarray:
    """Each item code's cluster (n,): items whose rows carry one ``cluster`` share it (within
    a split), every other item is its own; numbered in item order, so without clusters item
    j is cluster j."""
    label = np.empty(n, dtype=object)
    if "cluster" in mine:
        named = mine["cluster"].astype("string")
        label[codes] = np.where(
            named.notna(), "c:" + mine["split"].astype(str) + ":" + named.fillna(""), None
        )
    label = [f"i:{j}" if v is None else v for j, v in enumerate(label)]
    return pd.factorize(np.array(label, dtype=object))[0]


def design_effect(correct: np.ndarray, present: np.ndarray, clusters: np.ndarray) -> float:
    """The items' design effect measured on cells x items outcomes: per cell, the variance of
    its mean score with clusters resampled over that with items resampled (the clustered SE
    squared over the independent one, Miller 2024), the median over cells that vary; at least
    1. ``clusters`` labels each item (`item_clusters`: items alone in theirs are independent)."""
    ratios = []
    for y, seen in zip(np.asarray(correct, float), np.asarray(present, bool)):
        y, c = y[seen], np.asarray(clusters)[seen]
        n = len(y)
        if n < 2 or y.std() == 0:
            continue
        labels, code = np.unique(c, return_inverse=True)
        if len(labels) < 2:
            continue
        sums, counts = np.bincount(code, y), np.bincount(code)
        between = len(labels) / (len(labels) - 1) * ((sums - counts * y.mean()) ** 2).sum() / n**2
        ratios.append(between / (y.var(ddof=1) / n))
    return float(max(np.median(ratios), 1.0)) if ratios else 1.0


def item_moments(groups, correct: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Per point of >= 2 seeds (``groups``: each point's cell rows), on the items all its seeds
    scored: s - 1, B (the seeds' score variance, ddof 1), W (the item-outcome part, within
    items over the seeds) and p (1 - p) (doit.analysis.bootstrap's docstring)."""
    rows = []
    for idx in groups:
        y = correct[np.ix_(idx, present[idx].all(0))]
        m = y.shape[1]
        if m >= 2:
            w = y.var(0, ddof=1).sum() / m**2
            rows.append((len(idx) - 1, y.mean(1).var(ddof=1), w, y.mean() * (1 - y.mean())))
    return np.array(rows, float).reshape(-1, 4)


def pooled_seed_variance(moments: np.ndarray) -> tuple[float, float, int]:
    """(T, N, df) of the method of moments: sd^2 = max(T - N, 0), pooled over the points of
    ``moments`` (`item_moments`) with weights s - 1; (nan, nan, 0) without information."""
    w, between, within, slope = moments.T if len(moments) else np.zeros((4, 0))
    df, information = int(w.sum()), float(np.sum(w * slope**2))
    if df == 0 or information <= 0:
        return np.nan, np.nan, 0
    return float(np.sum(w * between)) / information, float(np.sum(w * within)) / information, df
