"""Binomial-likelihood scaling fits of one series (scores at grid points along one axis).

Scores are counts of correct items, bounded by chance c and 100%. Two forms, both with two
parameters (a, b) on t = log4 n (data axis) or t = log2 params (size axis):

- ``logistic``:  p = c + (1 - c) * sigmoid(a + b t)   (the chance floor fixed)
- ``loglinear``: p = a + b t                           (clipped to (0, 1))

Point estimates maximise the binomial likelihood with ``scipy.optimize``; bootstrap replicates
are fitted all at once by vectorised Fisher scoring, warm-started from the point estimate. Forms
are compared by AICc with the number of grid points as the sample size (AIC when there are too
few points for AICc); replicates choose their own form by the same criterion, so the form
choice is part of the uncertainty.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import expit, gammaln

FORMS = ("logistic", "loglinear")
N_PARAMS = 2
EPS = 1e-6
RIDGE = 1e-6  # a whisper of shrinkage keeps a flat or perfect series finite
MEANINGFUL_AICC = 2.0  # a smaller AICc gap says little about which form is right
COLUMNS = ["ability", "base", "n", "construction", "axis", "x", "form", "chosen", "a", "a_lo",
           "a_hi", "b", "b_lo", "b_hi", "chance", "points", "criterion", "ic", "ic_gap", "loglik",
           "replicates_choosing"]  # fmt: skip


def probability(form: str, theta: np.ndarray, t: np.ndarray, c) -> np.ndarray:
    """p for parameters ``theta`` (..., 2) at ``t`` (broadcast over the leading axes)."""
    eta = theta[..., :1] + theta[..., 1:2] * t
    if form == "logistic":
        p = c + (1 - c) * expit(eta)
    elif form == "loglinear":
        p = eta
    else:
        raise ValueError(f"unknown form {form!r}: expected one of {', '.join(FORMS)}")
    return np.clip(p, EPS, 1 - EPS)


def loglik(form, theta, t, k, m, c) -> np.ndarray:
    """Binomial log-likelihood without the binomial coefficient, summed over points."""
    p = probability(form, theta, t, c)
    return (k * np.log(p) + (m - k) * np.log1p(-p)).sum(-1)


def binomial_constant(k, m) -> float:
    return float((gammaln(m + 1) - gammaln(k + 1) - gammaln(m - k + 1)).sum())


def fit_point(form: str, t, k, m, c) -> np.ndarray:
    """Maximum-likelihood (a, b) for one series (scipy L-BFGS from a linearised start)."""
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
    y = np.log((p - c).clip(0.01) / (1 - p)) if form == "logistic" else p
    if np.ptp(t) == 0:
        return np.array([float(np.mean(y)), 0.0])
    b, a = np.polyfit(t, y, 1)
    return np.array([a, b])


def fit_replicates(form: str, t, k, m, c, theta0, iters: int = 30) -> np.ndarray:
    """(R, 2) maximum-likelihood parameters for R replicate count rows ``k``, ``m`` (R, G),
    by Fisher scoring with step halving, all replicates at once."""
    t = np.asarray(t, float)[None, :]
    theta = np.broadcast_to(np.asarray(theta0, float), (k.shape[0], 2)).copy()
    ll = loglik(form, theta, t, k, m, c)
    for _ in range(iters):
        eta = theta[:, :1] + theta[:, 1:] * t
        if form == "logistic":
            s = expit(eta)
            p, dp = c + (1 - c) * s, (1 - c) * s * (1 - s)
        else:
            p, dp = eta, np.ones_like(eta)
        p = np.clip(p, EPS, 1 - EPS)
        var = p * (1 - p)
        u, w = (k - m * p) / var * dp, m * dp**2 / var
        g = np.stack(
            [u.sum(1) - 2 * RIDGE * theta[:, 0], (u * t).sum(1) - 2 * RIDGE * theta[:, 1]], 1
        )
        h00, h01, h11 = w.sum(1) + RIDGE, (w * t).sum(1), (w * t * t).sum(1) + RIDGE
        det = np.maximum(h00 * h11 - h01**2, 1e-12)
        step = (
            np.stack([(h11 * g[:, 0] - h01 * g[:, 1]), (h00 * g[:, 1] - h01 * g[:, 0])], 1)
            / det[:, None]
        )
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


def aicc(ll: np.ndarray | float, n_points: int, n_params: int = N_PARAMS):
    """AICc with the number of grid points as the sample size; AIC when n_points <= p + 1."""
    aic = 2 * n_params - 2 * np.asarray(ll)
    if n_points - n_params - 1 > 0:
        return aic + 2 * n_params * (n_params + 1) / (n_points - n_params - 1)
    return aic


@dataclass
class SeriesFit:
    """Both forms fitted to one series; ``chosen`` by AICc, ``choice`` per replicate."""

    x: np.ndarray  # grid values on the raw scale (n or params), one per point
    t: np.ndarray  # the fitted axis (log4 n or log2 params)
    k: np.ndarray
    m: np.ndarray
    chance: float  # 0-1
    log_base: float
    theta: dict = field(default_factory=dict)  # form -> (2,)
    ll: dict = field(default_factory=dict)  # form -> full binomial log-likelihood
    ic: dict = field(default_factory=dict)  # form -> AICc (or AIC)
    reps: dict = field(default_factory=dict)  # form -> (R, 2)
    chosen: str = ""
    choice: np.ndarray | None = None  # (R,) index into FORMS
    criterion: str = "AICc"
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

    def curve(self, x) -> tuple[np.ndarray, np.ndarray | None]:
        """Fitted score (0-100) at ``x``: the point estimate (len x) and replicates (R, len x)."""
        t = self.to_t(x)[None, :]
        point = 100 * probability(self.chosen, self.theta[self.chosen][None], t, self.chance)[0]
        if self.choice is None:
            return point, None
        reps = np.stack([100 * probability(f, self.reps[f], t, self.chance) for f in FORMS])
        return point, reps[self.choice, np.arange(len(self.choice))]


def fit_series(
    x, k, m, chance: float, k_reps=None, m_reps=None, log_base: float = 4.0
) -> SeriesFit:
    """Fit both forms to points at ``x`` with ``k`` of ``m`` correct (``chance`` 0-1), and the
    bootstrap replicates ``k_reps``/``m_reps`` (R, G) when given."""
    x, k, m = (np.asarray(v, float) for v in (x, k, m))
    t = np.log(x) / np.log(log_base)
    fit = SeriesFit(x=x, t=t, k=k, m=m, chance=float(chance), log_base=log_base)
    g = fit.n_points
    fit.criterion = "AICc" if g - N_PARAMS - 1 > 0 else "AIC"
    centre = float(t.mean())
    const = binomial_constant(k, m)
    rep_ll = []
    for form in FORMS:
        th = fit_point(form, t - centre, k, m, chance)
        ll = float(loglik(form, th, t - centre, k, m, chance)) + const
        fit.theta[form] = _uncentre(th, centre)
        fit.ll[form] = ll
        fit.ic[form] = float(aicc(ll, g))
        if k_reps is not None:
            reps = fit_replicates(form, t - centre, k_reps, m_reps, chance, th)
            rep_ll.append(loglik(form, reps, (t - centre)[None], k_reps, m_reps, chance))
            fit.reps[form] = _uncentre(reps, centre)
    fit.chosen = min(FORMS, key=lambda f: fit.ic[f])
    if k_reps is not None:
        fit.choice = np.argmax(np.stack(rep_ll), 0)  # equal parameter counts: AICc = likelihood
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


def uniform(points):
    """Rows of the uniform curated grid (no leave-one-out, no mixes, n > 0)."""
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
    curated = uniform(pts) & use
    synthetic = (pts["construction"] == "synthetic").to_numpy(dtype=bool) & use
    data, size = {}, {}
    for (ability, base), idx in _groups(pts, curated, ["ability", "base"]):
        data[(ability, base, "curated")] = _fit(counts, idx, "n_per_ability", 4.0)
    for (ability, base), idx in _groups(pts, synthetic, ["ability", "base"]):
        data[(ability, base, "synthetic")] = _fit(counts, idx, "n_total", 4.0)
    for (ability, n), idx in _groups(pts, curated, ["ability", "n_per_ability"]):
        size[(ability, int(n))] = _fit(counts, idx, "params", 2.0)
    return GridFits({k: v for k, v in data.items() if v}, {k: v for k, v in size.items() if v},
                    counts.method, counts.replicates)  # fmt: skip


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
    fit = fit_series(x, pts["k"], pts["m"], chance, counts.k[:, idx], counts.m[:, idx], log_base)
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
            for form in FORMS:
                th, reps = fit.theta[form], fit.reps.get(form)
                lo, hi = (np.percentile(reps, [2.5, 97.5], axis=0) if reps is not None
                          else (np.full(2, np.nan),) * 2)  # fmt: skip
                rows.append({**where, "axis": axis,
                             "x": "log4 n" if axis == "data" else "log2 params",
                             "form": form, "chosen": form == fit.chosen,
                             "a": th[0], "a_lo": lo[0], "a_hi": hi[0],
                             "b": th[1], "b_lo": lo[1], "b_hi": hi[1],
                             "chance": 100 * fit.chance, "points": fit.n_points,
                             "criterion": fit.criterion, "ic": fit.ic[form],
                             "ic_gap": fit.ic_gap, "loglik": fit.ll[form],
                             "replicates_choosing": float(np.mean(fit.choice == FORMS.index(form)))
                             if fit.choice is not None else np.nan})  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)
