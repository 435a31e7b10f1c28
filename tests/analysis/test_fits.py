"""Binomial fits: vectorised replicates agree with scipy, AICc finds the generating form,
CIs shrink with items, and the recovered sensitivities' CIs cover the truth."""

import numpy as np
import pytest

from doit.analysis.bootstrap import bootstrap_counts
from doit.analysis.fits import fit_grid, fit_point, fit_replicates, fit_series, loglik
from doit.analysis.select import select_checkpoints
from doit.analysis.sensitivity import sensitivities
from doit.analysis.synthetic import Curve, planted_study

X8 = 4.0 ** np.arange(1, 9)


def draw(form, m, rng, x=X8, c=0.25):
    t = np.log(x) / np.log(4)
    p = c + 0.75 / (1 + np.exp(-(-2 + 0.5 * t))) if form == "logistic" else 0.2 + 0.09 * t
    return rng.binomial(m, p).astype(float), np.full(len(x), float(m))


def test_vectorised_replicates_reach_the_scipy_optimum():
    rng = np.random.default_rng(0)
    k, m = draw("logistic", 200, rng)
    t = np.log(X8) / np.log(4) - 4.5
    reps = rng.binomial(200, k / m, size=(20, 8)).astype(float)
    mm = np.broadcast_to(m, reps.shape)
    for form in ("logistic", "loglinear"):
        start = fit_point(form, t, k, m, 0.25)
        fast = fit_replicates(form, t, reps, mm, 0.25, start)
        for r in range(0, 20, 5):
            slow = fit_point(form, t, reps[r], m, 0.25)
            assert (
                loglik(form, fast[r], t, reps[r], m, 0.25)
                >= loglik(form, slow, t, reps[r], m, 0.25) - 1e-6
            )


@pytest.mark.parametrize("form", ["logistic", "loglinear"])
def test_aicc_picks_the_generating_form_with_8_n_and_many_items(form):
    rng = np.random.default_rng(1)
    picks = [fit_series(X8, *draw(form, 5000, rng), 0.25).chosen for _ in range(10)]
    assert picks.count(form) >= 9


def test_cis_shrink_as_items_grow():
    widths = []
    for items in (50, 400):
        table, it, _ = planted_study({"biology": Curve()}, n_items=items, rng=2, epochs=(10.0,))
        sens, _ = sensitivities(fit_grid(bootstrap_counts(select_checkpoints(table), it, 200)))
        r = sens.iloc[0]
        widths.append((r.data_sensitivity_hi - r.data_sensitivity_lo, r.mde_data))
    assert widths[1][0] < 0.6 * widths[0][0] and widths[1][1] < 0.6 * widths[0][1]


@pytest.mark.slow
def test_sensitivity_cis_cover_the_truth_in_89_to_99_percent_of_100_studies():
    """One ability, 2 bases, 6 n, 300 items per cell, 200 replicates per study."""
    hits = {"data_sensitivity": 0, "size_sensitivity": 0}
    for i in range(100):
        table, items, truth = planted_study(
            {"biology": Curve()}, n_items=300, rng=i, epochs=(10.0,)
        )
        counts = bootstrap_counts(select_checkpoints(table), items, 200, seed=i)
        sens, _ = sensitivities(fit_grid(counts))
        for col in hits:
            hits[col] += sens[f"{col}_lo"][0] <= truth[col][0] <= sens[f"{col}_hi"][0]
    assert 89 <= hits["data_sensitivity"] <= 99, hits
    assert 89 <= hits["size_sensitivity"] <= 99, hits
