"""half_rise_n (sensitivity.csv): the n at which the base-averaged fitted data curve has made
half its rise from floor to ceiling, with the interval of every replicate's curve."""

import numpy as np
import pytest

from doit.analysis.fits import fit_series
from doit.analysis.sensitivity import HALF_RISE, saturation

X = 4.0 ** np.arange(1, 7)  # n = 4 ... 4096


def logistic(mid_n: float, x=X, c=0.25):
    """A logistic in log4 n from chance c to 1, halfway at ``mid_n``."""
    t = np.log(x / mid_n) / np.log(4)
    return c + (1 - c) / (1 + np.exp(-1.5 * t))


def fitted(p, rng, m=1000, c=0.25):
    k = rng.binomial(m, p).astype(float)
    reps = rng.binomial(m, k / m, size=(300, len(X))).astype(float)
    ms = np.full(len(X), float(m))
    return fit_series(X, k, ms, c, reps, np.broadcast_to(ms, reps.shape))


@pytest.mark.parametrize("mid_n", [16.0, 128.0])
def test_half_rise_n_finds_the_planted_midpoint_inside_its_interval(mid_n):
    rng = np.random.default_rng(int(mid_n))
    point, lo, hi = saturation([fitted(logistic(mid_n), rng)], HALF_RISE)[:3]
    assert lo <= mid_n <= hi and mid_n / 1.5 < point < mid_n * 1.5
    assert hi / lo < 3  # 1,000 items per n decide it within a factor 3


def test_a_larger_dose_needs_more_items_for_half_the_rise():
    rng = np.random.default_rng(0)
    early, late = (saturation([fitted(logistic(n), rng)], HALF_RISE) for n in (8.0, 256.0))
    assert early[2] < late[1]  # the intervals do not overlap


def test_a_log_linear_curve_has_no_half_rise():
    rng = np.random.default_rng(1)
    p = 0.2 + 0.09 * np.log(4.0 ** np.arange(1, 9)) / np.log(4)
    x8, m = 4.0 ** np.arange(1, 9), np.full(8, 5000.0)
    fit = fit_series(x8, rng.binomial(5000, p).astype(float), m, 0.25)
    assert fit.chosen == "loglinear"
    assert np.isnan(saturation([fit], HALF_RISE)[0])


def test_sensitivity_csv_orders_half_rise_n_as_the_planted_curves_do():
    """Two abilities on one planted grid, one halfway by the grid's smallest n and one at about
    20 items (32 on the small base, earlier on the large):
    sensitivity.csv's half_rise_n orders them, each inside its interval, as saturation reads."""
    from doit.analysis.bootstrap import bootstrap_counts
    from doit.analysis.fits import fit_grid
    from doit.analysis.select import select_checkpoints
    from doit.analysis.sensitivity import sensitivities
    from doit.analysis.synthetic import Curve, planted_study

    curves = {"code": Curve(a=0.0, b_data=0.8), "history": Curve(a=-2.0, b_data=0.8)}
    ns = (4, 16, 64, 256, 1024, 4096)
    table, items, _ = planted_study(curves, ns=ns, n_items=400, rng=2)
    grid = fit_grid(bootstrap_counts(select_checkpoints(table), items, 200))
    sens = sensitivities(grid)[0].set_index("ability")
    for a in curves:
        row = sens.loc[a]
        hi = row["half_rise_n_hi"]  # empty: some replicate's curve gets there beyond the grid
        assert row["half_rise_n_lo"] <= row["half_rise_n"] and (
            np.isnan(hi) or row["half_rise_n"] <= hi
        )
        fits = [f for k, f in grid.data.items() if k[0] == a and k[2] == "curated"]
        assert row["half_rise_n"] == saturation(fits, HALF_RISE)[0]
    assert sens.loc["code", "half_rise_n"] < sens.loc["history", "half_rise_n_lo"]
    assert 10 < sens.loc["history", "half_rise_n"] < 60  # planted: 32 on s, 4 on l
