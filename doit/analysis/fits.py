"""Binomial-likelihood scaling fits of one series (scores at grid points along one axis).

Scores are counts of correct items, bounded by chance c and 100%. Three forms on t = log4 n
(data axis) or t = log2 params (size axis):

- ``logistic``:  p = c + (1 - c) * sigmoid(a + b t)        (the chance floor fixed, ceiling 100)
- ``loglinear``: p = a + b t                                (clipped to (0, 1))
- ``ceiling``:   p = c + (u - c) * sigmoid(a + b t), u = c + (1 - c) * sigmoid(d)
                 (the chance floor fixed, the ceiling u free: a plateau below 100 can be seen)

Point estimates maximise the binomial likelihood with ``scipy.optimize``; bootstrap replicates
are fitted all at once by vectorised Fisher scoring, warm-started from the point estimate. The
forms of a series are compared by ONE criterion, BIC with the series' scored items as the
sample size (the Bernoulli trials the likelihood counts): -2 loglik + P log(items). The two
two-parameter forms are ranked by likelihood alone whatever the criterion; the criterion only
decides when the free ceiling's extra parameter has earned its place. It replaced AICc with
the number of grid points as the sample size, which fell back to AIC when a form had too few
points and so judged a three-parameter form on four points more leniently than the others:
on planted series without a plateau (4-6 points, 100 or 1,000 items, 100 series each) BIC
chose the ceiling in 0-2% of series (AIC for every form: 1-11%), and it finds planted plateaus
at 60 and 80 points with 1,000 items in 39 of 40 series (tests/analysis/test_fits.py).
Replicates choose their own form by the same criterion, so the form choice is part of the
uncertainty. The free ceiling is fitted only to series with at least four points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import expit, gammaln

from doit.analysis.bootstrap import interval, intervals

FORMS = ("logistic", "loglinear", "ceiling")
N_PARAMS = {"logistic": 2, "loglinear": 2, "ceiling": 3}
EPS = 1e-6
RIDGE = 1e-6  # a whisper of shrinkage keeps a flat or perfect series finite
MEANINGFUL_IC_GAP = 2.0  # a smaller BIC gap says little about which form is right
COLUMNS = [
    "ability",
    "base",
    "n",
    "construction",
    "axis",
    "x",
    "form",
    "chosen",
    "a",
    "a_lo",
    "a_hi",
    "b",
    "b_lo",
    "b_hi",
    "ceiling",
    "ceiling_lo",
    "ceiling_hi",
    "chance",
    "points",
    "criterion",
    "ic",
    "ic_gap",
    "loglik",
    "replicates_choosing",
]


def probability(form: str, theta: np.ndarray, t: np.ndarray, c) -> np.ndarray:
    """p for parameters ``theta`` (..., P) at ``t`` (broadcast over the leading axes)."""
    return np.clip(_p_and_gradient(form, theta, t, c, gradient=False)[0], EPS, 1 - EPS)


def _p_and_gradient(form: str, theta: np.ndarray, t: np.ndarray, c, gradient: bool = True):
    """(p unclipped, dp/dtheta stacked on a last axis of size P, or None) at ``t``."""
    if form not in N_PARAMS:
        raise ValueError(f"unknown form {form!r}: expected one of {', '.join(FORMS)}")
    eta = theta[..., :1] + theta[..., 1:2] * t
    if form == "loglinear":
        one = np.ones_like(eta)
        return eta, np.stack([one, one * t], -1) if gradient else None
    s = expit(eta)
    top = 1 - c if form == "logistic" else (1 - c) * expit(theta[..., 2:3])
    if not gradient:
        return c + top * s, None
    d_eta = top * s * (1 - s)
    grads = [d_eta, d_eta * t]
    if form == "ceiling":
        grads.append(s * top * (1 - expit(theta[..., 2:3])))
    return c + top * s, np.stack(grads, -1)


def ceiling(form: str, theta: np.ndarray, c: float) -> np.ndarray:
    """The curve's upper asymptote (0-1): 1 for logistic, u for ceiling, NaN for loglinear."""
    theta = np.asarray(theta, float)
    if form == "ceiling":
        return c + (1 - c) * expit(theta[..., 2])
    return np.full(theta.shape[:-1], 1.0 if form == "logistic" else np.nan)


def loglik(form, theta, t, k, m, c) -> np.ndarray:
    """Binomial log-likelihood without the binomial coefficient, summed over points."""
    p = probability(form, theta, t, c)
    return (k * np.log(p) + (m - k) * np.log1p(-p)).sum(-1)


def binomial_constant(k, m) -> float:
    return float((gammaln(m + 1) - gammaln(k + 1) - gammaln(m - k + 1)).sum())


def fit_point(form: str, t, k, m, c) -> np.ndarray:
    """Maximum-likelihood parameters for one series (scipy L-BFGS from a linearised start)."""
    t, k, m = (np.asarray(x, float) for x in (t, k, m))
    start = _start(form, t, k, m, c)

    def nll(theta):
        return -loglik(form, theta, t, k, m, c) + RIDGE * (theta**2).sum()

    best = optimize.minimize(
        nll, start, method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-9}
    )
    best = optimize.minimize(nll, best.x, method="L-BFGS-B")
    return best.x


def _start(form, t, k, m, c):
    p = np.clip((k + 0.5) / (m + 1), EPS, 1 - EPS)
    top = 1.0
    if form == "ceiling":  # start the ceiling just above the best observed score
        top = min(float(p.max()) + 0.5 * (1 - float(p.max())), 1 - EPS)
    y = np.log((p - c).clip(0.01) / (top - p).clip(EPS)) if form != "loglinear" else p
    if np.ptp(t) == 0:
        a, b = float(np.mean(y)), 0.0
    else:
        b, a = np.polyfit(t, y, 1)
    if form == "ceiling":
        u = np.clip((top - c) / (1 - c), EPS, 1 - EPS)
        return np.array([a, b, np.log(u / (1 - u))])
    return np.array([a, b])


def fit_replicates(form: str, t, k, m, c, theta0, iters: int = 30) -> np.ndarray:
    """(R, P) maximum-likelihood parameters for R replicate count rows ``k``, ``m`` (R, G),
    by Fisher scoring with step halving, all replicates at once."""
    if form == "ceiling":  # also start below a ceiling of ~100, where its gradient vanishes
        starts = [np.asarray(theta0, float), np.append(theta0[:2], min(theta0[2], 2.0))]
        fits = [_scoring(form, t, k, m, c, start, iters) for start in starts]
        better = loglik(form, fits[1], np.asarray(t, float)[None], k, m, c) > loglik(
            form, fits[0], np.asarray(t, float)[None], k, m, c
        )
        return np.where(better[:, None], fits[1], fits[0])
    return _scoring(form, t, k, m, c, theta0, iters)


def _scoring(form: str, t, k, m, c, theta0, iters: int) -> np.ndarray:
    t = np.asarray(t, float)[None, :]
    n_par = N_PARAMS[form]
    theta = np.broadcast_to(np.asarray(theta0, float), (k.shape[0], n_par)).copy()
    ll = loglik(form, theta, t, k, m, c)
    for _ in range(iters):
        p, dp = _p_and_gradient(form, theta, t, c)  # (R, G), (R, G, P)
        p = np.clip(p, EPS, 1 - EPS)
        var = p * (1 - p)
        g = np.einsum("rg,rgp->rp", (k - m * p) / var, dp) - 2 * RIDGE * theta
        h = np.einsum("rg,rgp,rgq->rpq", m / var, dp, dp) + RIDGE * np.eye(n_par)
        step = np.linalg.solve(h + 1e-12 * np.eye(n_par), g[..., None])[..., 0]
        step = np.clip(step, -3, 3)
        for _ in range(6):  # step halving where the likelihood would fall
            new = theta + step
            ll_new = loglik(form, new, t, k, m, c)
            worse = ll_new < ll - 1e-10
            if not worse.any():
                break
            step[worse] *= 0.5
        keep = ll_new >= ll - 1e-10
        theta[keep], ll[keep] = new[keep], ll_new[keep]
        if np.abs(step).max() < 1e-8:
            break
    return theta


def forms_for(n_points: int) -> tuple[str, ...]:
    """The forms a series of ``n_points`` grid points is fitted with: the two-parameter forms
    always (two points determine them), a form with more parameters only when it leaves at
    least one point over (the free ceiling needs four)."""
    return tuple(f for f in FORMS if N_PARAMS[f] <= 2 or n_points > N_PARAMS[f])


CRITERION = "BIC (sample size: the series' scored items)"


def information(ll: np.ndarray | float, form: str, n_items: float) -> np.ndarray | float:
    """BIC of ``form`` at log-likelihood ``ll`` with ``n_items`` scored items in the series."""
    return N_PARAMS[form] * np.log(max(float(n_items), 2.0)) - 2 * np.asarray(ll)


@dataclass
class SeriesFit:
    """Every form fitted to one series; ``chosen`` by the series' criterion, ``choice`` per
    replicate (by the same criterion)."""

    x: np.ndarray  # grid values on the raw scale (n or params), one per point
    t: np.ndarray  # the fitted axis (log4 n or log2 params)
    k: np.ndarray
    m: np.ndarray
    chance: float  # 0-1
    log_base: float
    theta: dict = field(default_factory=dict)  # form -> (P,)
    ll: dict = field(default_factory=dict)  # form -> full binomial log-likelihood
    ic: dict = field(default_factory=dict)  # form -> AICc (or AIC)
    reps: dict = field(default_factory=dict)  # form -> (R, P)
    chosen: str = ""
    forms: tuple = FORMS  # the forms fitted (`forms_for` the number of points)
    choice: np.ndarray | None = None  # (R,) index into ``forms``
    criterion: str = CRITERION
    columns: np.ndarray | None = None  # the Counts point indices of the series' points

    @property
    def n_points(self) -> int:
        return len(np.unique(self.x))

    @property
    def ic_gap(self) -> float:
        vals = sorted(self.ic.values())
        return vals[1] - vals[0] if len(vals) > 1 else float("inf")

    def to_t(self, x) -> np.ndarray:
        return np.log(np.asarray(x, float)) / np.log(self.log_base)

    def asymptote(self) -> tuple[float, np.ndarray | None]:
        """The fitted curve's ceiling (0-100; NaN for loglinear): the point estimate and each
        replicate's (its own form's)."""
        point = 100 * float(ceiling(self.chosen, self.theta[self.chosen], self.chance))
        if self.choice is None:
            return point, None
        reps = np.stack([100 * ceiling(f, self.reps[f], self.chance) for f in self.forms])
        return point, reps[self.choice, np.arange(len(self.choice))]

    def curve(self, x) -> tuple[np.ndarray, np.ndarray | None]:
        """Fitted score (0-100) at ``x``: the point estimate (len x) and replicates (R, len x)."""
        t = self.to_t(x)[None, :]
        point = 100 * probability(self.chosen, self.theta[self.chosen][None], t, self.chance)[0]
        if self.choice is None:
            return point, None
        reps = np.stack([100 * probability(f, self.reps[f], t, self.chance) for f in self.forms])
        return point, reps[self.choice, np.arange(len(self.choice))]


def fit_series(
    x, k, m, chance: float, k_reps=None, m_reps=None, log_base: float = 4.0
) -> SeriesFit:
    """Fit every form to points at ``x`` with ``k`` of ``m`` correct (``chance`` 0-1), and the
    bootstrap replicates ``k_reps``/``m_reps`` (R, G) when given."""
    x, k, m = (np.asarray(v, float) for v in (x, k, m))
    t = np.log(x) / np.log(log_base)
    fit = SeriesFit(x=x, t=t, k=k, m=m, chance=float(chance), log_base=log_base)
    g = fit.n_points
    fit.forms = forms_for(g)
    items = float(m.sum())
    centre = float(t.mean())
    const = binomial_constant(k, m)
    rep_ic = []
    for form in fit.forms:
        th = fit_point(form, t - centre, k, m, chance)
        ll = float(loglik(form, th, t - centre, k, m, chance)) + const
        fit.theta[form] = _uncentre(th, centre)
        fit.ll[form] = ll
        fit.ic[form] = float(information(ll, form, items))
        if k_reps is not None:
            reps = fit_replicates(form, t - centre, k_reps, m_reps, chance, th)
            rep_ll = loglik(form, reps, (t - centre)[None], k_reps, m_reps, chance)
            rep_ic.append(information(rep_ll, form, items))  # constants cancel in a replicate
            fit.reps[form] = _uncentre(reps, centre)
    fit.chosen = min(fit.forms, key=lambda f: fit.ic[f])
    if k_reps is not None:
        fit.choice = np.argmin(np.stack(rep_ic), 0)
    return fit


def _uncentre(theta: np.ndarray, centre: float) -> np.ndarray:
    out = np.array(theta, float, copy=True)
    out[..., 0] -= out[..., 1] * centre
    return out


# --- the grid's series ---------------------------------------------------------------------------
@dataclass
class GridFits:
    """Every series of the grid: ``data[(ability, base, construction)]`` over n (curated:
    n_per_ability; synthetic: n_total) and ``size[(ability, n)]`` over params (curated)."""

    data: dict
    size: dict
    method: str
    replicates: int


def same_n_rows(points):
    """Rows of cells where every ability was trained on the same n (curated: no leave-one-out,
    no mixes, n > 0): the per-ability grid the data and size curves are fitted on."""
    n = points["n_per_ability"].astype("Float64")
    return (
        (
            (points["construction"] == "curated")
            & points["excluded_ability"].isna()
            & n.notna()
            & (n > 0)
        )
        .fillna(False)
        .to_numpy(dtype=bool)
    )


def fit_grid(counts, columns=None) -> GridFits:
    """Fit every data and size series of ``counts`` (a bootstrap.Counts); ``columns`` limits
    the fits to those point indices (prediction fits on a subset of the grid)."""
    pts = counts.points
    use = np.ones(len(pts), bool) if columns is None else np.isin(np.arange(len(pts)), columns)
    curated = same_n_rows(pts) & use
    synthetic = (pts["construction"] == "synthetic").to_numpy(dtype=bool) & use
    data, size = {}, {}
    for (ability, base), idx in _groups(pts, curated, ["ability", "base"]):
        data[(ability, base, "curated")] = _fit(counts, idx, "n_per_ability", 4.0)
    for (ability, base), idx in _groups(pts, synthetic, ["ability", "base"]):
        data[(ability, base, "synthetic")] = _fit(counts, idx, "n_total", 4.0)
    for (ability, n), idx in _groups(pts, curated, ["ability", "n_per_ability"]):
        size[(ability, int(n))] = _fit(counts, idx, "params", 2.0)
    return GridFits(
        {k: v for k, v in data.items() if v},
        {k: v for k, v in size.items() if v},
        counts.method,
        counts.replicates,
    )


def _groups(pts, mask, keys):
    sub = pts[mask]
    for key, frame_ in sub.groupby(keys, sort=True):
        yield key, frame_.index.to_numpy()


def _fit(counts, idx, column, log_base):
    pts = counts.points.iloc[idx]
    x = pts[column].to_numpy(dtype=float)
    if len(np.unique(x)) < 2 or (x <= 0).any():
        return None
    chance = float(pts["chance"].mean()) / 100
    t = counts.tally(idx)
    fit = fit_series(x, t.correct, t.items, chance, t.correct_reps, t.items_reps, log_base)
    fit.columns = idx
    return fit


def fits_table(grid: GridFits) -> pd.DataFrame:
    """fits.csv: one row per series and form, with the parameters' 95% CIs."""
    rows = []
    for axis, fits in (("data", grid.data), ("size", grid.size)):
        for key, fit in fits.items():
            where = {"ability": key[0]}
            if axis == "data":
                where.update(base=key[1], n=None, construction=key[2])
            else:
                where.update(base=None, n=key[1], construction="curated")
            for form in fit.forms:
                th, reps = fit.theta[form], fit.reps.get(form)
                lo, hi = intervals(th, reps)
                top = 100 * ceiling(form, th, fit.chance)
                top_reps = None if reps is None else 100 * ceiling(form, reps, fit.chance)
                top_lo, top_hi = interval(float(top), top_reps)
                rows.append(
                    {
                        **where,
                        "axis": axis,
                        "x": "log4 n" if axis == "data" else "log2 params",
                        "form": form,
                        "chosen": form == fit.chosen,
                        "a": th[0],
                        "a_lo": lo[0],
                        "a_hi": hi[0],
                        "b": th[1],
                        "b_lo": lo[1],
                        "b_hi": hi[1],
                        "ceiling": top,
                        "ceiling_lo": top_lo,
                        "ceiling_hi": top_hi,
                        "chance": 100 * fit.chance,
                        "points": fit.n_points,
                        "criterion": fit.criterion,
                        "ic": fit.ic[form],
                        "ic_gap": fit.ic_gap,
                        "loglik": fit.ll[form],
                        "replicates_choosing": float(np.mean(fit.choice == fit.forms.index(form)))
                        if fit.choice is not None
                        else np.nan,
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)
