"""The variance model (doit.stats.variance) against its own algebra and against the analysis's
bootstrap on a planted world."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from doit.stats import variance as V
from doit.stats.power import power, se_for

SHAPE = V.Shape({"s": 1e9, "m": 2e9, "l": 4e9}, (4, 16, 64, 256), items=100)


def test_pairing_removes_the_share_rho_of_a_contrasts_item_variance():
    flat = V.Inputs(score=50, item_corr=0.0, seed_sd=0.0)
    paired = V.Inputs(score=50, item_corr=0.4, seed_sd=0.0)
    for se in (V.data_se, V.size_se):
        assert se(SHAPE, paired) ** 2 == pytest.approx(0.6 * se(SHAPE, flat) ** 2)
    assert V.difference_se(paired, 100, 1, 1) ** 2 == pytest.approx(0.6 * 50)


def test_the_data_se_of_one_base_is_the_weighted_lines_slope_se():
    shape = V.Shape({"s": 1e9}, (1, 4, 16), items=100)
    t = np.array([0.0, 1.0, 2.0])  # log4 n
    var = 1e4 * 0.25 / 100  # points^2 at 50%
    assert V.data_se(shape, V.Inputs(seed_sd=0.0)) == pytest.approx(
        np.sqrt(var / np.sum((t - t.mean()) ** 2))
    )


def test_seeds_and_items_shrink_the_se_and_a_seed_sd_grows_it():
    base = V.Inputs(score=70, item_corr=0.2, seed_sd=0.3)
    more_items = V.Shape(SHAPE.bases, SHAPE.ns, items=400)
    more_seeds = V.Shape(SHAPE.bases, SHAPE.ns, items=100, seeds=3)
    assert V.data_se(more_items, base) < V.data_se(SHAPE, base)
    assert V.data_se(more_seeds, base) < V.data_se(SHAPE, base)
    no_seed = V.Inputs(score=70, item_corr=0.2, seed_sd=0.0)
    assert V.data_se(SHAPE, no_seed) < V.data_se(SHAPE, base)
    assert np.isnan(V.size_se(V.Shape({"s": 1e9}, (4, 16), 100), base))


def test_a_macro_difference_counts_one_seed_draw_for_all_abilities():
    """Seed parts add before squaring (one draw per training), item parts after."""
    one = V.Inputs(score=50, item_corr=0.0, seed_sd=0.5)
    k = 4
    macro = V.macro_difference_se({f"a{i}": one for i in range(k)}, 100, 1, 1)
    item = 2 * 1e4 * 0.25 / 100
    seed = 2 * (100 * 0.25 * 0.5) ** 2
    assert macro**2 == pytest.approx((k * item + k**2 * seed) / k**2)


def test_power_and_its_inverse_agree():
    assert power(se_for(6.0)).mde == pytest.approx(6.0)
    assert power(0.5).resistant_reachable and not power(1.5).resistant_reachable


def test_inputs_out_of_range_are_one_line_naming_ability_and_input():
    with pytest.raises(ValueError, match=r"^history: item_corr 1.2 is out of range \[0, 1\)$"):
        V.Inputs(item_corr=1.2).check("history")
    with pytest.raises(ValueError, match="score 0 is out of range"):
        V.Inputs(score=0).check("code")


@pytest.mark.slow
@pytest.mark.parametrize("design", ["a", "b"])
def test_the_models_se_is_the_bootstraps_on_a_planted_world(design):
    """The expected SE from the pilot's own inputs within 25% of the bootstrap SE (the SD of
    the sensitivity replicates) for every ability, and within 10% in the median."""
    from doit.analysis import synthetic as syn
    from doit.analysis.bootstrap import bootstrap_counts
    from doit.analysis.fits import fit_grid
    from doit.analysis.select import select_checkpoints
    from doit.analysis.sensitivity import sensitivities
    from doit.stats.pilot import pilot_inputs

    world = syn.planted_world(design, seed_sd=0.4, rng=3)
    selected = select_checkpoints(world.table, rule="last")
    prior = 0.2 if world.design.seeds == 1 else None
    _, reps = sensitivities(fit_grid(bootstrap_counts(selected, world.items, 200, seed_sd=prior)))
    inputs = pilot_inputs(selected, world.items, "planted", seed_sd=prior)
    d = world.design
    shape = V.Shape(d.bases, d.trained_ns, d.n_items, d.seeds)
    ratios = [
        se(shape, inputs[a][0]) / np.nanstd(reps[a][axis], ddof=1)
        for a in reps
        for axis, se in (("data", V.data_se), ("size", V.size_se))
    ]
    assert 0.75 < min(ratios) and max(ratios) < 1.25, np.round(ratios, 2)
    assert np.median(ratios) == pytest.approx(1.0, abs=0.1)


def test_the_design_effect_of_clustered_items_is_one_plus_m_minus_one_icc():
    """Clusters of 4 items whose shared probability is 0.1 or 0.9 (ICC 0.64) have a design
    effect of 1 + 3 x 0.64 = 2.92; the same outcomes labelled as independent items have 1."""
    rng = np.random.default_rng(0)
    p = np.repeat(rng.choice([0.1, 0.9], size=(30, 150)), 4, axis=1)  # 30 cells x 600 items
    correct = (rng.random(p.shape) < p).astype(float)
    present = np.ones_like(correct, dtype=bool)
    clusters = np.repeat(np.arange(150), 4)
    assert V.design_effect(correct, present, clusters) == pytest.approx(2.92, rel=0.15)
    assert V.design_effect(correct, present, np.arange(600)) == pytest.approx(1.0, abs=0.1)


def test_a_pilot_with_clustered_items_measures_their_design_effect():
    """Pairs of items that share a cluster and one outcome (in every cell) double biology's
    item variance: the pilot measures a design effect near 2 there and says so; an ability
    without clusters keeps the caller's value."""
    from doit.analysis import synthetic as syn
    from doit.analysis.select import select_checkpoints
    from doit.stats.pilot import pilot_inputs

    world = syn.planted_world("a", seed_sd=0.0, rng=3)
    items = world.items.copy()
    bio = (items["ability"] == "biology").to_numpy()
    pair = items["idx"].to_numpy() // 2
    items["cluster"] = np.where(bio, "fact " + pd.Series(pair).astype(str), None)
    first = items[bio & (items["idx"] % 2 == 0)].set_index(["cell", "epoch", "split", "idx"])
    key = pd.MultiIndex.from_arrays([items["cell"], items["epoch"], items["split"], pair * 2])
    items.loc[bio, "correct"] = first["correct"].reindex(key).to_numpy()[bio]
    rows = select_checkpoints(world.table, rule="last")
    inputs = pilot_inputs(rows, items, "planted", seed_sd=0.2, design_effect=1.3)
    biology, info = inputs["biology"]
    assert info["design_source"] == "pilot" and biology.design_effect == pytest.approx(2, rel=0.2)
    assert inputs["code"][1]["design_source"] == "given" and inputs["code"][0].design_effect == 1.3
    chinese = inputs["chinese"][0]  # pairs cells by the items' difficulty above its chance
    assert 0.3 < chinese.difficulty_sd < 3 and chinese.guess == pytest.approx(0.135)
    from doit.stats.planner import ability_inputs

    given, _ = ability_inputs(inputs, item_corr=0.3)  # the user's pairing for every pair
    assert given["code"].difficulty_sd is None and given["code"].item_corr == 0.3


def test_the_difficulty_model_pairs_close_cells_more_than_far_ones():
    """Items with a shared logit difficulty (and a guessing floor): no spread, no covariance;
    a cell's own item variance is p (1 - p) at most; cells at close scores covary more than
    cells far apart (the pair-blind rho priced every pair alike)."""
    p = np.array([0.45, 0.5, 0.9])
    assert np.allclose(V.item_covariance(p, 0.0), 0.0, atol=1e-12)
    c = V.item_covariance(p, 1.5, guess=0.25)
    assert (np.diag(c) < p * (1 - p)).all() and (np.diag(c) > 0).all()
    corr = c / np.sqrt(np.outer(np.diag(c), np.diag(c)))
    assert corr[0, 1] > corr[0, 2] > 0
    flat = V.Inputs(score=50, seed_sd=0.0)
    paired = V.Inputs(score=50, seed_sd=0.0, difficulty_sd=1.5)
    assert V.size_se(SHAPE, paired) < V.size_se(SHAPE, flat)  # pairing shrinks a contrast


@pytest.mark.parametrize("sigma,guess", [(0.6, 0.0), (1.5, 0.25)])
def test_the_difficulty_sd_is_recovered_from_cells_outcomes(sigma, guess):
    from scipy.special import expit

    estimates = []
    for r in range(6):
        rng = np.random.default_rng(r)
        d = rng.normal(0, sigma, 400)
        p = guess + (1 - guess) * expit(np.linspace(-1.5, 2, 8)[:, None] + d[None])
        y = (rng.random(p.shape) < p).astype(float)
        estimates.append(V.difficulty_sd(y, np.ones_like(y, bool), guess))
    assert np.mean(estimates) == pytest.approx(sigma, abs=0.2)
