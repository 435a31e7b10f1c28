"""Per-ability sensitivities with 95% CIs, saturation, minimum detectable effects and groups.

Definitions (the same whatever form won, since they read the fitted curves):

- ``data_sensitivity``: (fitted score at the largest n - at the smallest) / log4(n_max / n_min),
  points per 4x data, averaged over bases (curated uniform cells);
- ``size_sensitivity``: (fitted score at the largest base - at the smallest) /
  log2(params_max / params_min), points per doubling, averaged over n;
- ``saturation_n``: the smallest n at which the base-averaged fitted data curve has made 95%
  of its rise from its floor (the curve's n -> 0 value, ``fits.py``) to its ceiling (100 for the logistic form, the fitted ceiling for
  the free-ceiling form; a log-linear curve has none and never saturates); empty when that n
  lies beyond the grid. Its 95% CI (``saturation_n_lo``/``_hi``) comes from the same point on
  every replicate's curve (a replicate that does not saturate inside the grid counts as beyond
  it; an upper bound beyond the grid is empty); ``saturation_share`` is the share of
  replicates that saturate inside the grid;
- ``mde_data`` / ``mde_size``: the smallest sensitivity this grid and these item counts detect
  with 80% power at alpha 0.05 (two-sided): (z_0.975 + z_0.8) x the bootstrap standard error;
- ``group`` with margin delta: a factor is responsive if its CI's lower bound > delta,
  resistant if its CI lies inside [-delta, delta], undetermined otherwise; then, in order,
  saturating, responsive_both, resistant_size, resistant_both, undetermined.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from doit.analysis.bootstrap import Z, interval
from doit.analysis.fits import GridFits
from doit.analysis.limits import ability_note

DELTA = 2.0
POWER_Z = Z + norm.ppf(0.8)
GROUPS = ("saturating", "responsive_both", "resistant_size", "resistant_both", "undetermined")
COLUMNS = [
    "ability",
    "data_sensitivity",
    "data_sensitivity_lo",
    "data_sensitivity_hi",
    "size_sensitivity",
    "size_sensitivity_lo",
    "size_sensitivity_hi",
    "saturation_n",
    "saturation_n_lo",
    "saturation_n_hi",
    "saturation_share",
    "mde_data",
    "mde_size",
    "group",
]
# The published study's groups (Song et al., 2025), for the report.
PUBLISHED = {
    "code": "responsive_both",
    "biology": "responsive_both",
    "history": "responsive_both",
    "understanding": "resistant_size",
    "reasoning": "resistant_size",
    "ethics": "resistant_both",
    "role_play": "resistant_both",
    "creative_writing": "saturating",
}


def slope(fits: list, per_log) -> tuple[float, np.ndarray | None]:
    """Mean over series of (fit at the largest x - at the smallest) / log_per(x ratio)."""
    points, reps = [], []
    for fit in fits:
        lo, hi = fit.x.min(), fit.x.max()
        span = np.log(hi / lo) / np.log(per_log)
        pt, rp = fit.curve([lo, hi])
        points.append((pt[1] - pt[0]) / span)
        if rp is not None:
            reps.append((rp[:, 1] - rp[:, 0]) / span)
    if not points:
        return np.nan, None
    return float(np.mean(points)), (np.mean(reps, 0) if reps else None)


SATURATED = 0.95  # the share of its rise (chance -> ceiling) at which a curve has saturated


def saturation_n(fits: list, share: float = SATURATED) -> float:
    """The smallest n where the base-averaged fitted curve has made ``share`` of its rise from
    its floor to its ceiling; NaN when it has no ceiling (log-linear) or gets there beyond the grid."""
    return saturation(fits, share)[0]


def saturation(fits: list, share: float = SATURATED) -> tuple[float, float, float, float]:
    """(saturation_n, its 95% CI low and high, the share of replicates that saturate inside
    the grid): the point on the base-averaged curve and on every replicate's curve."""
    if not fits:
        return (np.nan,) * 4
    lo, hi = max(f.x.min() for f in fits), min(f.x.max() for f in fits)
    if hi <= lo:
        return (np.nan,) * 4
    n = np.geomspace(lo, hi, 200)
    curves, tops, floors = zip(*((f.curve(n), f.asymptote(), f.floor()) for f in fits))
    point = first_reaching(
        np.mean([c[0] for c in curves], 0),
        np.mean([t[0] for t in tops]),
        np.mean([b[0] for b in floors]),
        n,
        share,
    )
    if any(c[1] is None for c in curves):
        return point, np.nan, np.nan, np.nan
    rep_curves = np.mean([c[1] for c in curves], 0)  # (R, len n)
    rep_tops, rep_floors = (np.mean([v[1] for v in vs], 0) for vs in (tops, floors))  # (R,)
    reps = np.array(
        [first_reaching(c, t, b, n, share) for c, t, b in zip(rep_curves, rep_tops, rep_floors)]
    )
    beyond = np.where(np.isnan(reps), np.inf, reps)  # not inside the grid: beyond it
    ci_lo, ci_hi = interval(np.inf if np.isnan(point) else point, beyond, method="inverted_cdf")
    return point, _finite(ci_lo), _finite(ci_hi), float(np.mean(~np.isnan(reps)))


def first_reaching(curve: np.ndarray, top: float, floor: float, n: np.ndarray, share: float):
    """The first n where ``curve`` reaches floor + share x (top - floor); NaN if it never does
    (or has no top)."""
    if not np.isfinite(top) or top <= floor:
        return np.nan
    reached = np.nonzero(curve >= floor + share * (top - floor))[0]
    return float(n[reached[0]]) if len(reached) else np.nan


def _finite(value: float) -> float:
    return float(value) if np.isfinite(value) else np.nan


def classify(lo: float, hi: float, delta: float) -> str:
    if np.isnan(lo) or np.isnan(hi):
        return "undetermined"
    if lo > delta:
        return "responsive"
    if -delta < lo and hi < delta:
        return "resistant"
    return "undetermined"


def group(data: str, size: str, saturates: bool) -> str:
    if data == "responsive" and saturates:
        return "saturating"
    if data == "responsive" and size == "responsive":
        return "responsive_both"
    if data == "responsive" and size == "resistant":
        return "resistant_size"
    if data == "resistant" and size == "resistant":
        return "resistant_both"
    return "undetermined"


def sensitivities(
    grid: GridFits, delta: float = DELTA, abilities=(), shape: dict | None = None
) -> tuple[pd.DataFrame, dict]:
    """sensitivity.csv's table (a row for every fitted ability and every one of
    ``abilities``, with a ``note`` on what could not be computed; ``shape``: the grid's
    ``limits.shape`` for those notes), and per ability the replicate arrays (for explain)."""
    abilities = sorted({k[0] for k in grid.data} | {k[0] for k in grid.size} | set(abilities))
    shape = shape or {"n_per_base": {}, "bases_per_n": {}}
    most_n = max(map(len, shape["n_per_base"].values()), default=0)
    most_bases = max(map(len, shape["bases_per_n"].values()), default=0)
    rows, reps = [], {}
    for a in abilities:
        data_fits = [f for k, f in grid.data.items() if k[0] == a and k[2] == "curated"]
        size_fits = [f for k, f in grid.size.items() if k[0] == a]
        d, d_reps = slope(data_fits, 4.0)
        s, s_reps = slope(size_fits, 2.0)
        d_lo, d_hi = interval(d, d_reps)
        s_lo, s_hi = interval(s, s_reps)
        sat, sat_lo, sat_hi, sat_share = saturation(data_fits)
        data_class, size_class = classify(d_lo, d_hi, delta), classify(s_lo, s_hi, delta)
        note, degenerate = ability_note(data_fits, size_fits, most_n, most_bases)
        if degenerate:  # a CI of width 0 from counts at 0 or m says nothing about the factor
            data_class = size_class = "undetermined"
        rows.append(
            {
                "ability": a,
                "data_sensitivity": d,
                "data_sensitivity_lo": d_lo,
                "data_sensitivity_hi": d_hi,
                "size_sensitivity": s,
                "size_sensitivity_lo": s_lo,
                "size_sensitivity_hi": s_hi,
                "saturation_n": sat,
                "saturation_n_lo": sat_lo,
                "saturation_n_hi": sat_hi,
                "saturation_share": sat_share,
                "mde_data": _mde(d_reps),
                "mde_size": _mde(s_reps),
                "group": group(data_class, size_class, not np.isnan(sat)),
                "data_class": data_class,
                "size_class": size_class,
                "note": note,
            }
        )
        reps[a] = {"data": d_reps, "size": s_reps}
    return pd.DataFrame(rows, columns=[*COLUMNS, "data_class", "size_class", "note"]), reps


def _mde(reps) -> float:
    return float(POWER_Z * np.nanstd(reps, ddof=1)) if reps is not None else np.nan
