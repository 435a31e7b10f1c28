"""Per-ability sensitivities with 95% CIs, saturation, the power the design had, a decision
per axis and the group the two decisions give.

Definitions (the same whatever form won, since they read the fitted curves):

- ``data_sensitivity``: (fitted score at the largest n - at the smallest) / log4(n_max / n_min),
  points per 4x data, averaged over bases (curated uniform cells);
- ``size_sensitivity``: (fitted score at the largest base - at the smallest) /
  log2(params_max / params_min), points per doubling, averaged over n;
- ``saturation_n``: the smallest n at which the base-averaged fitted data curve has made 95%
  of its rise from its floor (the curve's n -> 0 value, ``fits.py``) to its ceiling (100 for the
  logistic form, the fitted ceiling for the free-ceiling form; a log-linear line has no
  asymptote: 100 when the clipped line reaches 100 inside the grid, else it does not saturate
  in the grid, ``SeriesFit.saturation_top``); empty when that n
  lies beyond the grid. Its 95% CI (``saturation_n_lo``/``_hi``) comes from the same point on
  every replicate's curve (a replicate that does not saturate inside the grid counts as beyond
  it; an upper bound beyond the grid is empty); ``saturation_share`` is the share of
  replicates that saturate inside the grid;
- ``half_rise_n``: the same reading at half the rise (``HALF_RISE``): the smallest n at which
  the base-averaged fitted data curve is halfway from its floor to its ceiling, the items a
  lever such as the micro corpus's dose should move; with its 95% CI (``half_rise_n_lo``/
  ``_hi``) from every replicate's curve, as saturation_n's. Empty for a log-linear curve (no
  ceiling), for a falling curve (its ceiling below its floor) and when half the rise lies
  beyond the grid; the grid's smallest n when the curve is past half there already (a bound:
  half the rise came at that n or before);
- the power of the design (`power`, the one definition a power planner reuses), from the
  bootstrap standard error se of a sensitivity under a normal approximation: ``mde_data`` /
  ``mde_size`` = delta + (z_0.975 + z_0.8) se, the smallest true sensitivity the design calls
  responsive (95% lower bound > delta) with 80% probability; ``resistant_reachable_*``: whether
  the expected 90% half-width z_0.95 se is below delta (else even a true zero could not be
  called resistant);
- ``data_class`` / ``size_class`` with margin delta (`classify`): ``responsive`` when the 95%
  CI's lower bound > delta, ``harmed`` when its upper bound < -delta, ``resistant`` when the
  90% CI (``*_lo90``/``_hi90``) lies inside [-delta, delta] (equivalence by the two one-sided
  tests at 5% each), else ``undetermined``, or ``not decidable with this design`` when
  resistance is not reachable (and for an axis without a fit);
- ``group`` (`group`): ``harmed_by_data`` (data harmed, whatever the size axis), then
  ``saturating`` (data responsive and saturation_n's 95% CI inside the grid), then from the
  pair (data, size) in `PAIRS`: responsive_both, resistant_size, size_driven, resistant_both;
  any other pair is ``undetermined``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from doit.analysis.bootstrap import interval
from doit.analysis.fits import GridFits
from doit.analysis.limits import ability_note

# The one MDE definition lives below both the analysis and the grid's planner (doit.stats.power)
from doit.stats.power import DELTA, EQUIVALENCE_LEVEL, Power, power  # noqa: F401

RESPONSIVE, RESISTANT, HARMED, UNDETERMINED = "responsive", "resistant", "harmed", "undetermined"
NOT_DECIDABLE = "not decidable with this design"
CLASSES = (RESPONSIVE, RESISTANT, HARMED, UNDETERMINED, NOT_DECIDABLE)
# (data_class, size_class) -> group; harmed_by_data and saturating are decided before it
PAIRS = {
    (RESPONSIVE, RESPONSIVE): "responsive_both",
    (RESPONSIVE, RESISTANT): "resistant_size",
    (RESISTANT, RESPONSIVE): "size_driven",
    (RESISTANT, RESISTANT): "resistant_both",
}
GROUPS = ("harmed_by_data", "saturating", *PAIRS.values(), UNDETERMINED)
AXES = ("data", "size")
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
    "data_class",
    "size_class",
    "resistant_reachable_data",
    "resistant_reachable_size",
    "data_sensitivity_lo90",
    "data_sensitivity_hi90",
    "size_sensitivity_lo90",
    "size_sensitivity_hi90",
    "half_rise_n",
    "half_rise_n_lo",
    "half_rise_n_hi",
    "note",
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
HALF_RISE = 0.5  # the share of its rise at which half_rise_n reads the curve


def saturation_n(fits: list, share: float = SATURATED) -> float:
    """The smallest n where the base-averaged fitted curve has made ``share`` of its rise from
    its floor to its ceiling; NaN when it has no top inside the grid (a log-linear line below 100
    at the largest n) or gets there beyond the grid."""
    return saturation(fits, share)[0]


def saturation(fits: list, share: float = SATURATED) -> tuple[float, float, float, float]:
    """(saturation_n, its 95% CI low and high, the share of replicates that saturate inside
    the grid): the point on the base-averaged curve and on every replicate's curve."""
    point, reps = reaching(fits, share)
    if reps is None:
        return point, np.nan, np.nan, np.nan
    beyond = np.where(np.isnan(reps), np.inf, reps)  # not inside the grid: beyond it
    ci_lo, ci_hi = interval(np.inf if np.isnan(point) else point, beyond, method="inverted_cdf")
    return point, _finite(ci_lo), _finite(ci_hi), float(np.mean(~np.isnan(reps)))


def reaching(fits: list, share: float) -> tuple[float, np.ndarray | None]:
    """The n where the base-averaged fitted curve has made ``share`` of its rise, and the same
    on every replicate's curve (R,) (NaN: not inside the grid; None without replicates)."""
    if not fits:
        return np.nan, None
    lo, hi = max(f.x.min() for f in fits), min(f.x.max() for f in fits)
    if hi <= lo:
        return np.nan, None
    n = np.geomspace(lo, hi, 200)
    curves, tops, floors = zip(*((f.curve(n), f.saturation_top(), f.floor()) for f in fits))
    point = first_reaching(
        np.mean([c[0] for c in curves], 0),
        np.mean([t[0] for t in tops]),
        np.mean([b[0] for b in floors]),
        n,
        share,
    )
    if any(c[1] is None for c in curves):
        return point, None
    rep_curves = np.mean([c[1] for c in curves], 0)  # (R, len n)
    rep_tops, rep_floors = (np.mean([v[1] for v in vs], 0) for vs in (tops, floors))  # (R,)
    reps = [first_reaching(c, t, b, n, share) for c, t, b in zip(rep_curves, rep_tops, rep_floors)]
    return point, np.array(reps)


def first_reaching(curve: np.ndarray, top: float, floor: float, n: np.ndarray, share: float):
    """The first n where ``curve`` reaches floor + share x (top - floor); NaN if it never does
    (or has no top)."""
    if not np.isfinite(top) or top <= floor:
        return np.nan
    reached = np.nonzero(curve >= floor + share * (top - floor))[0]
    return float(n[reached[0]]) if len(reached) else np.nan


def _finite(value: float) -> float:
    return float(value) if np.isfinite(value) else np.nan


def classify(
    lo: float, hi: float, delta: float, lo90=None, hi90=None, reachable: bool = True
) -> str:
    """One axis's class from its 95% CI (lo, hi) and its 90% CI (lo90, hi90; the 95% one when
    not given, as for a noise-free value where both are the point): responsive, harmed,
    resistant, else undetermined, or not decidable with this design when resistance is not
    ``reachable``. Without a CI: not decidable with this design."""
    lo90 = lo if lo90 is None else lo90
    hi90 = hi if hi90 is None else hi90
    if np.isnan(lo) or np.isnan(hi):
        return NOT_DECIDABLE
    if lo > delta:
        return RESPONSIVE
    if hi < -delta:
        return HARMED
    if -delta < lo90 and hi90 < delta:
        return RESISTANT
    return UNDETERMINED if reachable else NOT_DECIDABLE


def group(data: str, size: str, saturates: bool) -> str:
    """The group of an ability from its data and size classes; ``saturates``: saturation_n's
    95% CI lies inside the grid. The data axis alone decides harmed_by_data and saturating."""
    if data == HARMED:
        return "harmed_by_data"
    if data == RESPONSIVE and saturates:
        return "saturating"
    return PAIRS.get((data, size), UNDETERMINED)


def axis_decision(point: float, reps, delta: float) -> dict:
    """One axis's intervals (95% and 90%), power and class, keyed by column suffix."""
    lo, hi = interval(point, reps)
    lo90, hi90 = interval(point, reps, EQUIVALENCE_LEVEL)
    se = float(np.nanstd(reps, ddof=1)) if reps is not None else np.nan
    mde, reachable = power(se, delta)
    return {
        "_lo": lo,
        "_hi": hi,
        "_lo90": lo90,
        "_hi90": hi90,
        "mde": mde,
        "reachable": reachable,
        "class": classify(lo, hi, delta, lo90, hi90, reachable),
    }


def short_of(axis: str, point: float, lo: float, hi: float, delta: float) -> str:
    """Why an undecided axis whose point estimate lies beyond the margin was not called
    responsive or harmed ("" when its point lies inside the margin)."""
    if point < -delta <= hi:
        reach = f"its 95% CI reaches {hi:+.2f}: not harmed"
        return f"{axis}_sensitivity {point:+.2f} < -{delta:g} but {reach}"
    if lo <= delta < point:
        reach = f"its 95% CI reaches {lo:+.2f}: not responsive"
        return f"{axis}_sensitivity {point:+.2f} > {delta:g} but {reach}"
    return ""


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
        row, reps[a] = {"ability": a}, {}
        for axis, fits, per in (("data", data_fits, 4.0), ("size", size_fits, 2.0)):
            point, reps[a][axis] = slope(fits, per)
            d = axis_decision(point, reps[a][axis], delta)
            row[f"{axis}_sensitivity"] = point
            row.update({f"{axis}_sensitivity{k}": d[k] for k in ("_lo", "_hi", "_lo90", "_hi90")})
            row[f"mde_{axis}"], row[f"resistant_reachable_{axis}"] = d["mde"], d["reachable"]
            row[f"{axis}_class"] = d["class"]
        sat, sat_lo, sat_hi, sat_share = saturation(data_fits)
        row.update(saturation_n=sat, saturation_n_lo=sat_lo, saturation_n_hi=sat_hi)
        row["saturation_share"] = sat_share
        half = saturation(data_fits, HALF_RISE)[:3]
        row.update(zip(("half_rise_n", "half_rise_n_lo", "half_rise_n_hi"), half))
        note, degenerate = ability_note(data_fits, size_fits, most_n, most_bases)
        if degenerate:  # a CI of width 0 from counts at 0 or m says nothing about the factor
            row["data_class"] = row["size_class"] = UNDETERMINED
        saturates = bool(np.isfinite([sat, sat_lo, sat_hi]).all())
        row["group"] = group(row["data_class"], row["size_class"], saturates)
        short = [
            short_of(axis, *(row[f"{axis}_sensitivity{x}"] for x in ("", "_lo", "_hi")), delta)
            for axis in AXES
            if row[f"{axis}_class"] in (UNDETERMINED, NOT_DECIDABLE) and not degenerate
        ]
        row["note"] = "; ".join(filter(None, [note, *short]))
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS), reps
