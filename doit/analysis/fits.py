"""Binomial-likelihood scaling fits of one series (scores at grid points along one axis).

Scores are counts of correct items. Three forms on t = log4 n (data axis) or t = log2 params
(size axis), with s = sigmoid(a + b t), b >= 0 in the sigmoid forms:

- ``logistic``:  p = f + (1 - f) s              (the floor f, the ceiling 100)
- ``loglinear``: p = a + b t                    (clipped to (0, 1); no asymptote)
- ``ceiling``:   p = f + (u - f) s, u = sigmoid(d)  (the ceiling u free: a plateau below 100 can
                 be seen, and with u < f the curve falls from its floor)

**The floor** f = sigmoid(phi) is the curve's value as t -> -inf (n -> 0), a parameter of the
sigmoid forms fitted with one more binomial observation of p = f: the base's own untuned
(n = 0) cell where the series has one (its k of m items, resampled in every replicate like
every other point: the anchor, ``floor_source`` "untuned"), otherwise a prior of
``PRIOR_ITEMS`` pseudo-items at the kind's chance ("prior"). So a curve may start above chance
or below it, and may fall (b >= 0 keeps the floor the n -> 0 end of the curve; a falling curve
is a ceiling below its floor, or a negative log-linear slope). The log-linear form has no floor:
its criterion counts the floor observation at its own share (the saturated term), so every
form is judged on the same observations; every form's BIC then carries the same extra
parameter, which cancels.

Point estimates maximise the likelihood with ``scipy.optimize``; bootstrap replicates are
fitted all at once by vectorised Fisher scoring, warm-started from the point estimate. The
scoring is **clip-aware**: a point whose probability lies past a clip (EPS, 1 - EPS) on the side
its count agrees with (0 correct below, all correct above) contributes a flat likelihood and no
information, so it does not pin the other parameters (with the gradient of the unclipped line
and the weight m / EPS it froze every replicate at the point estimate). The forms of a series
are compared by ONE criterion, BIC with the series' scored items as the sample size (the
Bernoulli trials the likelihood counts): -2 loglik + P log(items). The two two-parameter forms
are ranked by likelihood alone whatever the criterion; the criterion only decides when the free
ceiling's extra parameter has earned its place. It replaced AICc with the number of grid points
as the sample size, which fell back to AIC when a form had too few points and so judged a
three-parameter form on four points more leniently than the others: on planted series without a
plateau (4-6 points, 100 or 1,000 items, 100 series each) BIC chose the ceiling in 0-2% of
series (AIC for every form: 1-11%), and it finds planted plateaus at 60 and 80 points with 1,000
items in 39 of 40 series (tests/analysis/test_fits.py). Under a training-seed effect the points
scatter more than their items explain, and that scatter bought the free ceiling its parameter:
every log-likelihood in the criterion is divided by the free ceiling's Pearson dispersion
(chi-square / degrees of freedom, at least 1; ``_dispersion``). On worlds with a per-item
difficulty and seed_sd 0.4 logit per cell (5 n, 200 items, 200 plateau-free rising series) the
ceiling was chosen in 13.5% of series before, 18.0% with the floor and no dispersion, 7.0% with
both. Replicates choose their own form by the same criterion, so the form choice is part of the
uncertainty. The free ceiling is fitted only
to series with at least four points.

A fit that failed (a non-finite optimum) or is degenerate (every count 0 or all; a parameter
whose replicates do not vary) says so in ``note``; such an interval is left empty, never
reported with width 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import expit, gammaln, xlogy

from doit.analysis.bootstrap import interval

FORMS = ("logistic", "loglinear", "ceiling")
CURVE_PARAMS = {"logistic": 2, "loglinear": 2, "ceiling": 3}  # the BIC's P (the floor cancels)
N_PARAMS = {"logistic": 3, "loglinear": 2, "ceiling": 4}  # theta's length (+ the floor's phi)
SIGMOID = ("logistic", "ceiling")
EPS = 1e-6
RIDGE = 1e-6  # a whisper of shrinkage keeps a flat or perfect series finite
MEANINGFUL_IC_GAP = 2.0  # a smaller BIC gap says little about which form is right
PRIOR_ITEMS = 20.0  # the chance prior on an unanchored floor, in pseudo-items (SD ~10 points)
FLOOR_SOURCES = {
    "untuned": "the base's untuned (n = 0) score, resampled",
    "prior": f"estimated, prior: the kind's chance worth {PRIOR_ITEMS:g} items",
}
FROZEN = 1e-9  # a replicate spread below this (relative) is no spread
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
    "floor",
    "floor_lo",
    "floor_hi",
    "floor_source",
    "chance",
    "points",
    "criterion",
    "ic",
    "ic_gap",
    "loglik",
    "replicates_choosing",
    "note",
]


@dataclass(frozen=True)
class Floor:
    """The floor's observation: ``k`` correct of ``m`` (an untuned cell, or the prior's
    pseudo-items), and per replicate (R,) when resampled; ``source``: a FLOOR_SOURCES key."""

    k: float
    m: float
    source: str
    k_reps: np.ndarray | None = None
    m_reps: np.ndarray | None = None

    @classmethod
    def prior(cls, chance: float) -> Floor:
        return cls(PRIOR_ITEMS * chance, PRIOR_ITEMS, "prior")

    def replicates(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        if self.k_reps is None:
            return np.full(r, self.k), np.full(r, self.m)
        return np.asarray(self.k_reps, float), np.asarray(self.m_reps, float)


def probability(form: str, theta: np.ndarray, t: np.ndarray) -> np.ndarray:
    """p for parameters ``theta`` (..., P) at ``t`` (broadcast over the leading axes)."""
    return np.clip(_p_and_gradient(form, theta, t, gradient=False)[0], EPS, 1 - EPS)


def _p_and_gradient(form: str, theta, t, gradient: bool = True, floor: bool = False):
    """(p unclipped, dp/dtheta stacked on a last axis of size P, or None) at ``t``; with
    ``floor`` one more column last: the floor observation's p = f (sigmoid forms)."""
    if form not in N_PARAMS:
        raise ValueError(f"unknown form {form!r}: expected one of {', '.join(FORMS)}")
    theta = np.asarray(theta, float)
    eta = theta[..., :1] + theta[..., 1:2] * t
    if form == "loglinear":
        one = np.ones_like(eta)
        return eta, np.stack([one, one * t], -1) if gradient else None
    s, f = expit(eta), expit(theta[..., -1:])
    u = expit(theta[..., 2:3]) if form == "ceiling" else np.ones_like(f)
    p = f + (u - f) * s
    if floor:
        p = np.concatenate([p, f], -1)
    if not gradient:
        return p, None
    d_eta = (u - f) * s * (1 - s)
    grads = [d_eta, d_eta * t]
    if form == "ceiling":
        grads.append(s * u * (1 - u))
    grads.append((1 - s) * f * (1 - f))
    dp = np.stack(grads, -1)
    if floor:  # the floor observation moves with phi only
        last = np.zeros(dp.shape[:-2] + (1, dp.shape[-1]))
        last[..., 0, -1] = (f * (1 - f))[..., 0]
        dp = np.concatenate([dp, last], -2)
    return p, dp


def ceiling(form: str, theta: np.ndarray) -> np.ndarray:
    """The curve's upper asymptote (0-1) as n grows: 1 for logistic, u for ceiling, NaN for
    loglinear."""
    theta = np.asarray(theta, float)
    if form == "ceiling":
        return expit(theta[..., 2])
    return np.full(theta.shape[:-1], 1.0 if form == "logistic" else np.nan)


def floor_of(form: str, theta: np.ndarray) -> np.ndarray:
    """The curve's value as n -> 0 (0-1): f for the sigmoid forms, NaN for loglinear."""
    theta = np.asarray(theta, float)
    return expit(theta[..., -1]) if form in SIGMOID else np.full(theta.shape[:-1], np.nan)


def loglik(form, theta, t, k, m, k0=None, m0=None) -> np.ndarray:
    """Binomial log-likelihood without the binomial coefficient, summed over points; with the
    floor observation ``k0`` of ``m0`` (per replicate: (R,)) added: at p = f for the sigmoid
    forms, at its own share (the saturated term) for loglinear."""
    p = probability(form, theta, t)
    ll = (k * np.log(p) + (m - k) * np.log1p(-p)).sum(-1)
    if k0 is None:
        return ll
    k0, m0 = np.asarray(k0, float), np.asarray(m0, float)
    if form in SIGMOID:
        f = np.clip(floor_of(form, theta), EPS, 1 - EPS)
        return ll + k0 * np.log(f) + (m0 - k0) * np.log1p(-f)
    share = k0 / m0
    return ll + xlogy(k0, share) + xlogy(m0 - k0, 1 - share)


def binomial_constant(k, m) -> float:
    return float((gammaln(m + 1) - gammaln(k + 1) - gammaln(m - k + 1)).sum())


def _bounds(form: str) -> list:
    """b >= 0 in the sigmoid forms (the floor stays the n -> 0 end of the curve)."""
    bounds = [(None, None)] * N_PARAMS[form]
    if form in SIGMOID:
        bounds[1] = (0.0, None)
    return bounds


def fit_point(form: str, t, k, m, floor: Floor) -> np.ndarray:
    """Maximum-likelihood parameters for one series: L-BFGS-B on the analytic gradient from
    each linearised start (b bounded below by 0 in the sigmoid forms); for loglinear, whose
    optimum often sits on a kink of the clipped likelihood where gradients stall, Nelder-Mead
    from the same starts too (cheap in two parameters); the best kept. bench/fit_speed.py,
    on the 2,080 series planted worlds of designs a, b and c1 give: 2.8x faster than the rule
    before (Nelder-Mead from each start, then L-BFGS-B on numerical gradients), and short of
    the better of the two optima by > 0.01 nats in 3 ceiling series (at most 0.81), where the
    rule before was in 5 (at most 1.46); on the test suite's series, 4x faster, and the rule
    before was up to 49 nats short on log-linear series with clipped points."""
    t, k, m = (np.asarray(x, float) for x in (t, k, m))

    def nll(theta):
        return -loglik(form, theta, t, k, m, floor.k, floor.m) + RIDGE * (theta**2).sum()

    def nll_and_gradient(theta):
        g = _gradient(form, theta, t, k, m, floor)
        return nll(theta), -g + 2 * RIDGE * theta

    bounds, starts = _bounds(form), _starts(form, t, k, m, floor)
    found = [
        optimize.minimize(
            nll_and_gradient, s, jac=True, method="L-BFGS-B", bounds=bounds, options=_LBFGS
        )
        for s in starts
    ]
    if form == "loglinear":
        found += [optimize.minimize(nll, s, method="Nelder-Mead", options=_SIMPLEX) for s in starts]
    return min(found, key=lambda r: r.fun if np.isfinite(r.fun) else np.inf).x


_SIMPLEX = {"xatol": 1e-7, "fatol": 1e-9}
_LBFGS = {"ftol": 1e-13, "gtol": 1e-9, "maxiter": 2000}


def _gradient(form: str, theta, t, k, m, floor: Floor) -> np.ndarray:
    """d loglik / d theta of the clipped likelihood (a clipped p is flat: no gradient), with
    the floor observation's term (sigmoid forms; loglinear's is a constant)."""
    p, dp = _p_and_gradient(form, theta, t)
    inside = (p > EPS) & (p < 1 - EPS)
    p = np.clip(p, EPS, 1 - EPS)
    g = (np.where(inside, k / p - (m - k) / (1 - p), 0.0)[:, None] * dp).sum(0)
    if form in SIGMOID:
        f = expit(theta[-1])
        if EPS < f < 1 - EPS:
            g[-1] += floor.k - floor.m * f
    return g


def _logit(p):
    p = np.clip(p, EPS, 1 - EPS)
    return np.log(p / (1 - p))


def _starts(form, t, k, m, floor: Floor) -> list[np.ndarray]:
    """Linearised starts: the floor at its observation's share, and (sigmoid forms) at half
    the lowest score, so that a curve rising from below its floor's prior is found too."""
    p = np.clip((k + 0.5) / (m + 1), EPS, 1 - EPS)
    if form == "loglinear":
        return [np.polyfit(t, p, 1)[::-1] if np.ptp(t) else np.array([p.mean(), 0.0])]
    share = float((floor.k + 0.5) / (floor.m + 1))
    return [_start(form, t, p, f) for f in {share, 0.5 * float(p.min())}]


def _start(form, t, p, f):
    f = float(np.clip(f, 0.001, 0.99))
    late = float(p[np.argmax(t)])
    u = 1.0
    if form == "ceiling":  # just above the best score when rising, below the worst when falling
        u = 0.5 * (p.max() + 1) if late >= f else 0.5 * p.min()
    y = _logit(((p - f) / (u - f)).clip(0.01, 0.99))
    b, a = np.polyfit(t, y, 1) if np.ptp(t) else (0.0, float(np.mean(y)))
    tail = [_logit(u)] if form == "ceiling" else []
    return np.array([a, max(b, 0.0), *tail, _logit(f)])


def fit_replicates(form: str, t, k, m, floor: Floor, theta0, iters: int = 40) -> np.ndarray:
    """(R, P) maximum-likelihood parameters for R replicate count rows ``k``, ``m`` (R, G)
    and the floor's replicates, by clip-aware Fisher scoring with step halving, all at once."""
    k0, m0 = floor.replicates(k.shape[0])
    if form == "ceiling":  # also start below a ceiling of ~100, where its gradient vanishes
        second = np.array(theta0, float)
        second[2] = min(second[2], 2.0)
        fits = [_scoring(form, t, k, m, k0, m0, s, iters) for s in (theta0, second)]
        tt = np.asarray(t, float)[None]
        better = loglik(form, fits[1], tt, k, m, k0, m0) > loglik(form, fits[0], tt, k, m, k0, m0)
        return np.where(better[:, None], fits[1], fits[0])
    theta = _scoring(form, t, k, m, k0, m0, theta0, iters)
    return _pivots(t, k, m, theta) if form == "loglinear" else theta


def _pivots(t, k, m, theta, iters: int = 30) -> np.ndarray:
    """The log-linear optimum often sits on a kink of the clipped likelihood: the line pivots
    on a point with 0 correct at p = 0 (or all correct at p = 1), where Newton's steps stall.
    For every such point, maximise over the slope of the line through it (a concave problem
    in one variable, solved by Newton for all replicates at once); keep what is better."""
    t = np.asarray(t, float)
    best, best_ll = theta.copy(), loglik("loglinear", theta, t[None], k, m)
    for j in range(len(t)):
        for end, agrees in ((0.0, k[:, j] <= 0), (1.0, k[:, j] >= m[:, j])):
            if not agrees.any():
                continue
            slope = best[:, 1].copy()
            arm = t - t[j]
            for _ in range(iters):
                p = end + slope[:, None] * arm
                flat = ((p <= EPS) & (k <= 0)) | ((p >= 1 - EPS) & (k >= m))
                p = np.clip(p, EPS, 1 - EPS)
                use = np.where(flat, 0.0, arm)
                g = ((k / p - (m - k) / (1 - p)) * use).sum(1)
                h = ((k / p**2 + (m - k) / (1 - p) ** 2) * use**2).sum(1) + 1e-12
                slope = slope + np.clip(g / h, -1.0, 1.0)
            cand = np.column_stack([end - slope * t[j], slope])
            cand_ll = loglik("loglinear", cand, t[None], k, m)
            better = agrees & (cand_ll > best_ll + 1e-12)
            best[better], best_ll[better] = cand[better], cand_ll[better]
    return best


def _scoring(form: str, t, k, m, k0, m0, theta0, iters: int) -> np.ndarray:
    t = np.asarray(t, float)[None, :]
    n_par = N_PARAMS[form]
    theta = np.broadcast_to(np.asarray(theta0, float), (k.shape[0], n_par)).copy()
    ll = loglik(form, theta, t, k, m, k0, m0)
    live = np.arange(len(theta))  # the replicates still moving
    for _ in range(iters):
        rows = (theta[live], k[live], m[live], k0[live], m0[live])
        new, ll_new = _step(form, t, *rows, ll[live])
        keep = ll_new >= ll[live] - 1e-10
        moved = np.abs(new - theta[live]).max(1) > 1e-8
        theta[live[keep]], ll[live[keep]] = new[keep], ll_new[keep]
        live = live[keep & moved]
        if not len(live):
            break
    return theta


def _solve(h: np.ndarray, g: np.ndarray) -> np.ndarray:
    """h^-1 g per row; a row whose information is singular in floating point (weights of
    ~1e10 where a clipped probability sits near 0 or 1) takes the pseudo-inverse's step."""
    try:
        return np.linalg.solve(h, g[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return (np.linalg.pinv(h) @ g[..., None])[..., 0]


def _step(form, t, theta, k, m, k0, m0, ll):
    """One Fisher-scoring step for the rows given, halved where the likelihood would fall:
    (new parameters, their log-likelihood)."""
    n_par, sigmoid = N_PARAMS[form], form in SIGMOID
    kk, mm = (np.column_stack([a, b]) if sigmoid else a for a, b in ((k, k0), (m, m0)))
    g, h = _score_and_information(form, theta, t, kk, mm, sigmoid)
    g, h = g - 2 * RIDGE * theta, h + 2 * RIDGE * np.eye(n_par)
    if sigmoid:  # b held at its bound 0 where the likelihood wants it lower
        held = (theta[:, 1] <= 0) & (g[:, 1] < 0)
        g[held, 1], h[held, 1, :], h[held, :, 1], h[held, 1, 1] = 0.0, 0.0, 0.0, 1.0
    step = np.clip(_solve(h + 1e-12 * np.eye(n_par), g), -3, 3)
    new = theta + step
    if sigmoid:
        new[:, 1] = np.maximum(new[:, 1], 0.0)
    ll_new = loglik(form, new, t, k, m, k0, m0)
    for _ in range(8):
        worse = np.flatnonzero(ll_new < ll - 1e-10)
        if not len(worse):
            break
        step[worse] *= 0.5
        new[worse] = theta[worse] + step[worse]
        if sigmoid:
            new[worse, 1] = np.maximum(new[worse, 1], 0.0)
        ll_new[worse] = loglik(form, new[worse], t, k[worse], m[worse], k0[worse], m0[worse])
    return new, ll_new


def _score_and_information(form, theta, t, k, m, floor: bool):
    """The gradient (R, P) and information (R, P, P) of the clipped likelihood (Fisher's;
    observed for loglinear): a point clipped on the side its count agrees with is flat there
    and informs nothing."""
    p, dp = _p_and_gradient(form, theta, t, floor=floor)  # (R, G), (R, G, P)
    flat = ((p <= EPS) & (k <= 0)) | ((p >= 1 - EPS) & (k >= m))
    dp = np.where(flat[..., None], 0.0, dp)
    p = np.clip(p, EPS, 1 - EPS)
    var = p * (1 - p)
    g = np.einsum("rg,rgp->rp", (k - m * p) / var, dp)
    # the log-linear likelihood is concave in theta: its observed curvature makes Newton's
    # step exact (a point with 0 correct curves by m, not the expected m / p, near p = 0)
    weight = k / p**2 + (m - k) / (1 - p) ** 2 if form == "loglinear" else m / var
    h = np.einsum("rg,rgp,rgq->rpq", weight, dp, dp)
    return g, h


def forms_for(n_points: int) -> tuple[str, ...]:
    """The forms a series of ``n_points`` grid points is fitted with: the two-parameter forms
    always (two points determine them), a form with more parameters only when it leaves at
    least one point over (the free ceiling needs four)."""
    return tuple(f for f in FORMS if CURVE_PARAMS[f] <= 2 or n_points > CURVE_PARAMS[f])


CRITERION = "BIC (sample size: the series' scored items)"


def information(ll: np.ndarray | float, form: str, n_items: float) -> np.ndarray | float:
    """BIC of ``form`` at log-likelihood ``ll`` with ``n_items`` scored items in the series."""
    return CURVE_PARAMS[form] * np.log(max(float(n_items), 2.0)) - 2 * np.asarray(ll)


@dataclass
class SeriesFit:
    """Every form fitted to one series; ``chosen`` by the series' criterion, ``choice`` per
    replicate (by the same criterion)."""

    x: np.ndarray  # grid values on the raw scale (n or params), one per point
    t: np.ndarray  # the fitted axis (log4 n or log2 params)
    k: np.ndarray
    m: np.ndarray
    chance: float  # 0-1, the kind's
    log_base: float
    floor_obs: Floor | None = None  # the floor's observation (module docstring)
    theta: dict = field(default_factory=dict)  # form -> (P,)
    ll: dict = field(default_factory=dict)  # form -> full binomial log-likelihood (n > 0 points)
    ic: dict = field(default_factory=dict)  # form -> BIC
    reps: dict = field(default_factory=dict)  # form -> (R, P)
    notes: dict = field(default_factory=dict)  # form -> what failed or is degenerate
    dispersion: float = 1.0  # the criterion's overdispersion (``_dispersion``)
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

    @property
    def floor_source(self) -> str:
        return self.floor_obs.source

    def to_t(self, x) -> np.ndarray:
        return np.log(np.asarray(x, float)) / np.log(self.log_base)

    def _each(self, point_of, reps_of):
        """(the chosen form's value, each replicate's value under its own form)."""
        point = float(point_of(self.chosen, self.theta[self.chosen]))
        if self.choice is None:
            return point, None
        reps = np.stack([reps_of(f, self.reps[f]) for f in self.forms])
        return point, reps[self.choice, np.arange(len(self.choice))]

    def asymptote(self) -> tuple[float, np.ndarray | None]:
        """The fitted curve's ceiling (0-100; NaN for loglinear): the point estimate and each
        replicate's (its own form's)."""
        return self._each(lambda f, th: 100 * ceiling(f, th), lambda f, th: 100 * ceiling(f, th))

    def saturation_top(self) -> tuple[float, np.ndarray | None]:
        """The top saturation_n measures a rise to (0-100), point and per replicate: the
        ceiling of a sigmoid form; for a log-linear line, which has no asymptote, 100 where the
        clipped line reaches 100 inside the series' x range (it can rise no further: saturated)
        and NaN where it is still below 100 at the largest x (not saturating in the grid)."""
        t_end = self.to_t([self.x.max()])

        def top(form, theta):
            if form != "loglinear":
                return 100 * ceiling(form, theta)
            at_end = _p_and_gradient(form, theta, t_end, gradient=False)[0][..., 0]
            return np.where(at_end >= 1 - EPS, 100.0, np.nan)

        return self._each(top, top)

    def floor(self) -> tuple[float, np.ndarray | None]:
        """The curve's score as n -> 0 (0-100), point and per replicate: the fitted floor of a
        sigmoid form; for loglinear (no asymptote) the floor's observed share."""
        obs = self.floor_obs
        r = 0 if self.choice is None else len(self.choice)
        k0, m0 = obs.replicates(r)

        def value(form, theta, share):
            return 100 * floor_of(form, theta) if form in SIGMOID else 100 * share

        return self._each(
            lambda f, th: value(f, th, obs.k / obs.m), lambda f, th: value(f, th, k0 / m0)
        )

    def curve(self, x) -> tuple[np.ndarray, np.ndarray | None]:
        """Fitted score (0-100) at ``x``: the point estimate (len x) and replicates (R, len x)."""
        t = self.to_t(x)[None, :]
        point = 100 * probability(self.chosen, self.theta[self.chosen][None], t)[0]
        if self.choice is None:
            return point, None
        reps = np.stack([100 * probability(f, self.reps[f], t) for f in self.forms])
        return point, reps[self.choice, np.arange(len(self.choice))]


def fit_series(
    x, k, m, chance: float, k_reps=None, m_reps=None, log_base: float = 4.0, floor=None
) -> SeriesFit:
    """Fit every form to points at ``x`` with ``k`` of ``m`` correct (``chance`` 0-1), and the
    bootstrap replicates ``k_reps``/``m_reps`` (R, G) when given; ``floor``: the floor's
    ``Floor`` observation (default: the chance prior)."""
    x, k, m = (np.asarray(v, float) for v in (x, k, m))
    t = np.log(x) / np.log(log_base)
    floor = floor or Floor.prior(float(chance))
    fit = SeriesFit(x=x, t=t, k=k, m=m, chance=float(chance), log_base=log_base, floor_obs=floor)
    fit.forms = forms_for(fit.n_points)
    items, centre, const = float(m.sum()), float(t.mean()), binomial_constant(k, m)
    full, rep_ll = {}, {}
    for form in fit.forms:
        th = fit_point(form, t - centre, k, m, floor)
        fit.theta[form] = _uncentre(th, centre)
        fit.ll[form] = float(loglik(form, th, t - centre, k, m)) + const
        full[form] = float(loglik(form, th, t - centre, k, m, floor.k, floor.m))
        if k_reps is not None:
            reps = fit_replicates(form, t - centre, k_reps, m_reps, floor, th)
            k0, m0 = floor.replicates(len(reps))
            rep_ll[form] = loglik(form, reps, (t - centre)[None], k_reps, m_reps, k0, m0)
            fit.reps[form] = _uncentre(reps, centre)
    fit.dispersion = _dispersion(fit)
    for form in fit.forms:
        ll = full[form] / fit.dispersion
        fit.ic[form] = float(information(ll, form, items)) if np.isfinite(ll) else np.inf
        fit.notes[form] = _notes(fit, form)
    fit.chosen = min(fit.forms, key=lambda f: fit.ic[f])
    if k_reps is not None:
        rep_ic = [
            np.where(
                np.isfinite(rep_ll[f]), information(rep_ll[f] / fit.dispersion, f, items), np.inf
            )
            for f in fit.forms
        ]
        fit.choice = np.argmin(np.stack(rep_ic), 0)
    return fit


def _dispersion(fit: SeriesFit) -> float:
    """Pearson's chi-square over its degrees of freedom for the most flexible form fitted (the
    free ceiling; at least 1): how much more the points scatter than their items alone explain
    (a training-seed effect per cell does). The criterion divides every log-likelihood by it
    (quasi-likelihood, as QAIC does), so scatter from seeds does not buy the free ceiling its
    parameter. Without the free ceiling the two-parameter forms are ranked by likelihood, which
    a common divisor does not change."""
    if "ceiling" not in fit.forms:
        return 1.0
    p = probability("ceiling", fit.theta["ceiling"], fit.t)
    chi2 = float((((fit.k - fit.m * p) ** 2) / (fit.m * p * (1 - p))).sum())
    return max(1.0, chi2 / (fit.n_points - CURVE_PARAMS["ceiling"]))


def _notes(fit: SeriesFit, form: str) -> list[str]:
    """What failed or is degenerate in one form's fit (fits.csv's ``note``)."""
    notes = []
    if not np.all(np.isfinite(fit.theta[form])) or not np.isfinite(fit.ic[form]):
        notes.append("the fit failed (no finite optimum)")
    if np.all((fit.k == 0) | (fit.k == fit.m)):
        notes.append("every point scores 0 or 100: no item variance")
    if fit.n_points == 2:
        notes.append("2 points: every two-parameter form passes through them")
    return notes


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


def untuned_rows(points):
    """Rows of the untuned bases' (n = 0) cells: the floors of the data curves."""
    n = points["n_total"].astype("Float64")
    untuned = (points["construction"] == "base") | (n == 0)
    return (untuned & points["excluded_ability"].isna()).fillna(False).to_numpy(dtype=bool)


def untuned_floor(counts, ability: str, base: str) -> Floor | None:
    """The floor observation of ``ability`` on ``base``: its untuned cells' counts (pooled,
    point and per replicate), or None when the base has no n = 0 cell."""
    pts = counts.points
    same = ((pts["ability"] == ability) & (pts["base"] == base)).fillna(False)
    idx = np.flatnonzero(untuned_rows(pts) & same.to_numpy(dtype=bool))
    if not len(idx):
        return None
    t = counts.tally(idx)
    return Floor(
        float(t.correct.sum()),
        float(t.items.sum()),
        "untuned",
        t.correct_reps.sum(1),
        t.items_reps.sum(1),
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
        floor = untuned_floor(counts, ability, base)
        data[(ability, base, "curated")] = _fit(counts, idx, "n_per_ability", 4.0, floor)
    for (ability, base), idx in _groups(pts, synthetic, ["ability", "base"]):
        floor = untuned_floor(counts, ability, base)
        data[(ability, base, "synthetic")] = _fit(counts, idx, "n_total", 4.0, floor)
    for (ability, n), idx in _groups(pts, curated, ["ability", "n_per_ability"]):
        size[(ability, int(n))] = _fit(counts, idx, "params", 2.0, None)
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


def _fit(counts, idx, column, log_base, floor):
    pts = counts.points.iloc[idx]
    x = pts[column].to_numpy(dtype=float)
    if len(np.unique(x)) < 2 or (x <= 0).any():
        return None
    chance = float(pts["chance"].mean()) / 100
    t = counts.tally(idx)
    fit = fit_series(
        x, t.correct, t.items, chance, t.correct_reps, t.items_reps, log_base, floor=floor
    )
    fit.columns = idx
    return fit


def _interval_or_note(name: str, point: float, reps, notes: list) -> tuple[float, float]:
    """The interval of one quantity, empty (and said in ``notes``) when its replicates do not
    vary: a zero-width interval would claim a certainty the fit does not have."""
    if reps is None or not np.isfinite(point):
        return np.nan, np.nan
    finite = np.asarray(reps, float)[np.isfinite(reps)]
    if len(finite) and np.ptp(finite) <= FROZEN * (1 + abs(point)):
        notes.append(f"{name}'s replicates do not vary: no interval")
        return np.nan, np.nan
    lo, hi = interval(point, reps)
    if hi - lo <= FROZEN * (1 + abs(point)):  # most replicates on one value: a bound (b = 0)
        notes.append(f"{name}'s replicates pile on {point:.3g} (a bound): no interval")
        return np.nan, np.nan
    return lo, hi


def _flat(theta, t, slack: float = 1e-4) -> bool:
    """True when the sigmoid lies within ``slack`` of 0 or 1 at every point: its a and b then
    move the curve by less than that, and the data cannot place them."""
    s = expit(theta[0] + theta[1] * np.asarray(t, float))
    return bool(np.all((s < slack) | (s > 1 - slack)))


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
                rows.append({**where, "axis": axis, **_form_row(fit, form)})
    return pd.DataFrame(rows, columns=COLUMNS)


def _form_row(fit: SeriesFit, form: str) -> dict:
    th, reps = fit.theta[form], fit.reps.get(form)
    notes = list(fit.notes.get(form, []))
    a_lo, a_hi = _interval_or_note("a", th[0], None if reps is None else reps[:, 0], notes)
    b_lo, b_hi = _interval_or_note("b", th[1], None if reps is None else reps[:, 1], notes)
    if form in SIGMOID and _flat(th, fit.t):
        a_lo = a_hi = b_lo = b_hi = np.nan
        notes.append(
            "the curve is flat at an asymptote over the whole grid: a and b are not "
            "identified (no interval)"
        )
    top = float(100 * ceiling(form, th))
    top_lo = top_hi = np.nan  # the logistic's ceiling is fixed at 100: no interval
    if form == "ceiling":
        top_reps = None if reps is None else 100 * ceiling(form, reps)
        top_lo, top_hi = _interval_or_note("ceiling", top, top_reps, notes)
    bottom, bottom_lo, bottom_hi = float(100 * floor_of(form, th)), np.nan, np.nan
    if form in SIGMOID:
        bottom_reps = None if reps is None else 100 * floor_of(form, reps)
        bottom_lo, bottom_hi = _interval_or_note("floor", bottom, bottom_reps, notes)
    return {
        "x": "log4 n" if fit.log_base == 4.0 else "log2 params",
        "form": form,
        "chosen": form == fit.chosen,
        "a": th[0],
        "a_lo": a_lo,
        "a_hi": a_hi,
        "b": th[1],
        "b_lo": b_lo,
        "b_hi": b_hi,
        "ceiling": top,
        "ceiling_lo": top_lo,
        "ceiling_hi": top_hi,
        "floor": bottom,
        "floor_lo": bottom_lo,
        "floor_hi": bottom_hi,
        "floor_source": fit.floor_source,
        "chance": 100 * fit.chance,
        "points": fit.n_points,
        "criterion": fit.criterion,
        "ic": fit.ic[form],
        "ic_gap": fit.ic_gap,
        "loglik": fit.ll[form],
        "replicates_choosing": float(np.mean(fit.choice == fit.forms.index(form)))
        if fit.choice is not None
        else np.nan,
        "note": "; ".join(notes),
    }
