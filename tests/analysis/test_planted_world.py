"""The planted world (`synthetic.planted_world`): per-item rows that reproduce the table, a
training-seed effect beyond binomial noise, a truth computed from the generator's own curves,
and a study folder the whole `doit analysis run` path reads."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from doit.analysis import synthetic as syn
from doit.analysis.cli import main
from doit.analysis.sensitivity import DELTA
from doit.io import OutputError

SMALL = syn.Design("small", {"s": 1_000_000_000, "l": 8_000_000_000}, (0, 4, 16, 64, 256))
FOUR = {"biology": "smooth", "code": "harmful", "creative_writing": "plateau", "ethics": "dip"}


def test_per_item_rows_reproduce_every_score_of_the_table():
    world = syn.planted_world("a", seed_sd=0.4, rng=3)
    keys = ["cell", "epoch", "split", "ability"]
    from_items = world.items.groupby(keys)["correct"].agg(["mean", "size"]).reset_index()
    both = world.table.merge(from_items, on=keys, validate="one_to_one")
    assert len(both) == len(world.table) == 360  # 2 bases x (1 + 4 n x 2 epochs) x 2 splits x 10
    assert np.allclose(both["score"].astype(float), 100 * both["mean"])
    assert (both["size"] == both["n_items"]).all()
    assert set(world.table["split"]) == {"valid", "test"}
    base = world.table[world.table["construction"] == "base"]
    assert set(base["epoch"]) == {0.0} and set(base["n_per_ability"]) == {0}


def _seed_variance_ratio(seed_sd: float) -> float:
    """The variance of seed 0 - seed 1 at each trained point over its binomial variance."""
    design = replace(SMALL, n_items=400, seeds=2)
    abilities = {a: "smooth" for a in ("biology", "history", "chinese", "reasoning")}
    rows = syn.planted_world(design, abilities, seed_sd=seed_sd, rng=5).table
    rows = rows[rows["n_per_ability"] > 0].astype({"score": float})
    wide = (
        rows.pivot_table("score", ["base", "n_per_ability", "epoch", "split", "ability"], "seed")
        / 100
    )
    p = wide.mean(axis=1)
    binomial = 2 * p * (1 - p) / design.n_items
    return float(((wide[0] - wide[1]) ** 2).mean() / binomial.mean())


def test_the_seed_effect_shows_as_between_seed_variance_beyond_binomial():
    assert 0.6 < _seed_variance_ratio(0.0) < 1.5  # items only: the binomial variance
    assert _seed_variance_ratio(0.4) > 3  # the seed effect on top


def test_the_truth_is_the_generators_expected_curve_not_a_stated_number():
    world = syn.planted_world(replace(SMALL, n_items=10_000), FOUR, seed_sd=0.0, rng=1)
    rows = world.table[(world.table["split"] == "test") & (world.table["epoch"] == 5.0)]
    score = rows.set_index(["ability", "base", "n_per_ability"])["score"].astype(float)
    truth = world.truth.set_index("ability")
    for a in FOUR:  # measured on 10,000 items per cell: the truth within item noise (SE 0.2)
        data = np.mean([score[a, b, 256] - score[a, b, 4] for b in ("s", "l")]) / 3
        size = np.mean([score[a, "l", n] - score[a, "s", n] for n in (4, 16, 64, 256)]) / 3
        assert abs(data - truth.loc[a, "data_sensitivity"]) < 0.6, a
        assert abs(size - truth.loc[a, "size_sensitivity"]) < 0.6, a
    lever = world.levers["biology"]
    steeper = replace(lever, beta_data=lever.beta_data + 0.5)
    moved = syn.planted_truth({"biology": steeper}, SMALL, 0.0).iloc[0]
    assert moved["data_sensitivity"] > truth.loc["biology", "data_sensitivity"] + 1
    again = syn.planted_world(SMALL, {"biology": steeper}, seed_sd=0.0, rng=9).truth.iloc[0]
    assert again["data_sensitivity"] == pytest.approx(moved["data_sensitivity"])


def test_the_kinds_plant_what_they_say():
    truths = pd.concat(
        [syn.planted_world(d, rng=r).truth.assign(design=d) for d in ("a", "c1") for r in (0, 1)]
    )
    off = truths["untuned"] - truths["chance"]
    assert (off > 1).any() and (off < -1).any()  # untuned scores off chance on both sides
    by_kind = truths.groupby("kind")
    assert (by_kind.get_group("harmful")["data_class"] == "harmed").all()
    assert (by_kind.get_group("size_only")["data_sensitivity"].abs() < 1e-9).all()
    plateau = by_kind.get_group("plateau")
    largest = plateau["design"].map({"a": 256, "c1": 1000})
    # solved at 1.5x on the seed-free curve; the truth averages over seeds (seed_sd 0.4): later
    assert np.allclose(plateau["saturation_n"] / largest, syn.PLATEAU_PAST, rtol=0.15)
    assert not plateau["saturates"].any()  # just past the grid: no plateau inside it
    dip = syn.planted_world("a", {"role_play": "dip"}, seed_sd=0.0, rng=2).levers["role_play"]
    lost = 100 * (replace(dip, dip=0.0).expected(0, [4, 256]) - dip.expected(0, [4, 256]))
    assert lost[0] > 5 and lost[1] < lost[0] / 10  # a dip at the first n, gone by the last
    assert [syn.planted_class(v, DELTA) for v in (-2.5, -1.9, 1.9, 2.5)] == [
        "harmed",
        "resistant",
        "resistant",
        "responsive",
    ]


def test_interference_lowers_a_score_as_the_other_abilities_items_grow():
    world = syn.planted_world("a", {"ethics": "interference"}, seed_sd=0.0, rng=4)
    alone = world.expected("ethics", "s", 64, n_other=0)
    crowded = world.expected("ethics", "s", 64, n_other=1000)
    assert crowded < alone - 2


def test_a_written_world_runs_through_the_whole_analysis(tmp_path):
    two = {"code": "harmful", "creative_writing": "plateau"}  # few panels: fast figures
    world = syn.planted_world("a", two, seed_sd=0.4, rng=0)
    study = world.write(tmp_path / "study")
    assert main(["run", str(study), "--out", str(tmp_path / "out"), "--replicates", "40"]) == 0
    sens = pd.read_csv(tmp_path / "out" / "sensitivity.csv")
    assert sorted(sens["ability"]) == sorted(two)
    assert pd.read_csv(study / "planted.csv")["ability"].tolist() == list(two)
    assert (tmp_path / "out" / "report.md").is_file()
    with pytest.raises(OutputError, match="not empty"):
        world.write(study)


def test_an_unknown_design_or_kind_is_named():
    with pytest.raises(ValueError, match="design 'z': one of a, b, c1, c3, c"):
        syn.planted_world("z")
    with pytest.raises(ValueError, match="kind 'flat': one of smooth"):
        syn.planted_world("a", {"biology": "flat"})


def test_the_seed_effect_is_also_stated_on_the_analysis_scale():
    """The world's seed effect moves every item's logit; the analysis's --seed-sd is on the
    logit of a cell's score. Without item spread, floor or ceiling the two are one scale;
    item spread damps it, and the truth's seed_sd_score says by how much."""
    bare = syn.Levers("smooth", chance=0.25, floor=0.0, ceiling=1.0, alpha=0.3, item_sd=0.0)
    assert bare.score_logit_slope(0.0, 16) == pytest.approx(1.0, abs=1e-6)
    spread = replace(bare, item_sd=1.0)
    assert 0.5 < spread.score_logit_slope(0.0, 16) < 1.0
    world = syn.planted_world("a", seed_sd=0.4, rng=0)
    truth = world.truth.set_index("ability")
    assert (truth["seed_sd_score"] > 0).all() and (truth["seed_sd_score"] < 0.4).all()
    rng = np.random.default_rng(0)  # measured: the logit of a cell's expected score, seed by seed
    lev = world.levers["math"]
    shifts = rng.normal(0, 0.4, 4000)
    scores = np.array([lev.expected(0.0, 64, shift=e) for e in shifts])
    measured = np.std(np.log(scores / (1 - scores)))
    slope = lev.score_logit_slope(0.0, 64)
    assert measured == pytest.approx(0.4 * slope, rel=0.1)


def test_the_saturating_kind_saturates_inside_the_grid_by_the_packages_definition():
    """sensitivity.py's saturation_n read off the noise-free curve (95% of the rise from the
    untuned score to the top, on the grid): the saturating kind gets there at 1/8 of the
    largest n; the plateau kind does not get there inside the grid."""
    from doit.analysis.sensitivity import SATURATED, first_reaching

    kinds = {"history": "saturating", "creative_writing": "plateau"}
    for design, rng in (("a", 0), ("b", 1), ("c1", 2)):
        world = syn.planted_world(design, kinds, seed_sd=0.0, rng=rng)
        des, truth = world.design, world.truth.set_index("ability")
        n = np.geomspace(min(des.trained_ns), max(des.trained_ns), 400)
        bases = np.array(list(syn._doublings(des).values()))[:, None]
        sat = {}
        for a, lev in world.levers.items():
            curve = lev.expected(bases, n[None]).mean(0)
            top, start = lev.expected(bases, syn.FAR).mean(), lev.expected(bases, 0.0).mean()
            sat[a] = first_reaching(curve, top, start, n, SATURATED)
        largest = max(des.ns)
        assert sat["history"] == pytest.approx(syn.SATURATING_AT * largest, rel=0.05)
        assert truth.loc["history", "saturation_n"] == pytest.approx(sat["history"], rel=0.05)
        assert truth.loc["history", "data_class"] == "responsive"
        assert truth.loc["history", "saturates"]
        assert np.isnan(sat["creative_writing"]) and not truth.loc["creative_writing", "saturates"]


def test_the_truth_is_the_seed_averaged_curve():
    """With a seed effect the planted value is the curve averaged over seeds (what a point's
    pooled seeds estimate): measured on many seeds' expected scores, not the seed-0 curve."""
    world = syn.planted_world(SMALL, {"biology": "smooth"}, seed_sd=0.8, rng=4)
    lev, truth = world.levers["biology"], world.truth.iloc[0]
    shifts = np.random.default_rng(0).normal(0, 0.8, 20_000)
    bases = list(syn._doublings(SMALL).values())

    def averaged(s, n):
        return 100 * np.mean(lev.expected(s, n, shift=shifts[:, None])[:, 0])

    size = np.mean([averaged(bases[1], n) - averaged(0.0, n) for n in (4, 16, 64, 256)])
    assert truth["size_sensitivity"] == pytest.approx(size / bases[1], abs=0.05)
    seed_free = syn.planted_size_sensitivity(lev, SMALL)
    assert abs(seed_free - truth["size_sensitivity"]) > 0.05  # the two estimands differ


def test_leave_one_out_cells_give_the_left_out_ability_none_of_its_own_items():
    """``Design.loo``: a cell per ability at each n on the largest base, seed 0; the ability
    left out trains on none of its own items beside the others' n (an interfered one falls
    below its untuned score there), every other one on its n beside k - 2 abilities' n."""
    design = replace(syn.DESIGNS["a"], loo=(64,))
    kinds = {"ethics": "interference", "biology": "smooth", "code": "smooth"}
    world = syn.planted_world(design, kinds, seed_sd=0.0, rng=4)
    t = world.table
    loo = t[t["excluded_ability"].notna()]
    assert set(loo["cell"]) == {f"s-n64-no_{a}-s0" for a in kinds} and set(loo["base"]) == {"s"}
    mine = loo[loo["cell"] == "s-n64-no_ethics-s0"].set_index(["ability", "split", "epoch"])
    mine = mine.sort_index()
    assert (mine.loc["ethics", "n_own"] == 0).all() and (mine.loc["biology", "n_own"] == 64).all()
    assert (loo["n_total"] == 64 * 2).all()
    ethics = world.levers["ethics"]
    doublings = syn._doublings(design)["s"]
    left_out = float(ethics.expected(doublings, 0, 64))
    assert left_out < float(ethics.expected(doublings, 0)) and ethics.interference > 0
    plain = syn.planted_world("a", kinds, seed_sd=0.0, rng=4)  # no loo: the same world as ever
    assert plain.table["excluded_ability"].isna().all()
    assert plain.table.equals(t[t["excluded_ability"].isna()].reset_index(drop=True))
