"""Curriculum policies (doit.analysis.curriculum): the exact allocation, bounds, the study's
heuristics (the reconstruct identity with the real DoIT pools), the transfer term, the
regression's recovery of a planted law, outputs in the mix schema."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import replace

import numpy as np
import pytest

from doit.analysis import synthetic as syn
from doit.analysis.curriculum import CurriculumError, Options, make, policies, write
from doit.analysis.curriculum.evidence import gather
from doit.analysis.curriculum.optimise import Infeasible, concave, maximise
from doit.analysis.curriculum.options import SETTINGS
from doit.analysis.curriculum.policies import equal_shares
from doit.analysis.curriculum.regression import lightgbm_module
from doit.analysis.synthetic import BASES, Curve, law_study, planted_study
from doit.data import abilities as ab
from doit.data.mixes import load_mix, resolve_counts
from doit.grid.random_mixes import draw
from tests.data.pools import DOIT_FULL
from tests.tiny import REPO


# --- the exact allocation ------------------------------------------------------------------------
def _brute(values, budget, costs=None):
    best = None
    for xs in itertools.product(*(range(len(v)) for v in values)):
        spent = sum(xs) if costs is None else sum(c[x] for c, x in zip(costs, xs))
        if spent == budget if costs is None else spent <= budget:
            total = sum(v[x] for v, x in zip(values, xs))
            best = total if best is None else max(best, total)
    return best


def test_maximise_is_exact_where_greedy_is_not():
    rng = np.random.default_rng(0)
    for trial in range(300):
        k = int(rng.integers(1, 4))
        sizes = rng.integers(1, 7, k)
        values = [rng.integers(0, 5, n).astype(float) for n in sizes]
        costs = [np.sort(rng.integers(0, 4, n)) for n in sizes] if trial % 3 == 1 else None
        budget = int(rng.integers(0, sizes.sum() + 1))
        best = _brute(values, budget, costs)
        if best is None:
            with pytest.raises(Infeasible):
                maximise(values, budget, costs)
            continue
        got = maximise(values, budget, costs)
        assert sum(v[x] for v, x in zip(values, got)) == pytest.approx(best)
        spent = sum(got) if costs is None else sum(c[x] for c, x in zip(costs, got))
        assert spent == budget if costs is None else spent <= budget
    # a logistic in log n is convex at small n: the greedy first step goes to the wrong ability
    steep = 100 / (1 + np.exp(-(np.log(np.arange(1, 41)) - np.log(20)) * 6))
    flat = 20 * np.log1p(np.arange(40)) / np.log(41)
    assert not concave(steep) and concave(flat)
    got = maximise([steep, flat], 39)
    assert sum(v[x] for v, x in zip([steep, flat], got)) == pytest.approx(_brute([steep, flat], 39))
    assert got[0] > 20  # the steep curve is worth climbing, though its first steps gain little


def test_equal_shares_respect_floors_and_caps_and_spend_the_total():
    keys = ab.ABILITY_KEYS
    lower = {k: 1 for k in keys} | {"ethics": 300}
    upper = {k: 1000 for k in keys} | {"biology": 100, "code": 50}
    got = equal_shares(2560, keys, lower, upper)
    assert sum(got.values()) == 2560
    assert got["ethics"] == 300 and got["biology"] == 100 and got["code"] == 50
    assert all(lower[k] <= got[k] <= upper[k] for k in keys)
    assert max(got.values()) - min(v for k, v in got.items() if k not in ("biology", "code")) <= 300


# --- the study's heuristics on a planted study ----------------------------------------------------
PLANTED = {
    "biology": Curve(a=-2.0, b_data=0.4, b_size=0.3),
    "history": Curve(a=-2.0, b_data=0.4, b_size=0.3),
    "code": Curve(a=-2.5, b_data=0.5, b_size=0.4, chance=1 / 3),
    "creative_writing": Curve(a=-2.33, b_data=1.0, b_size=0.0, chance=1 / 3),  # 95% at n ~1500
    "chinese": Curve(a=-2.0, b_data=0.3, b_size=0.2),
    "understanding": Curve(a=-2.5, b_data=0.5, b_size=0.0),
    "role_play": Curve(a=0.0, b_data=0.0, b_size=0.0, chance=1 / 3),
    "reasoning": Curve(a=-2.5, b_data=0.5, b_size=0.0),
    "math": Curve(a=-3.0, b_data=0.3, b_size=0.1, chance=0.01),
    "ethics": Curve(a=-1.0, b_data=0.0, b_size=0.0),
}


@pytest.fixture(scope="module")
def study_csv(tmp_path_factory):
    """Two bases, n = 4 ... 4096, 1,000 items a cell: ethics and role_play flat with their best
    validation score at n = 64, creative_writing saturating at >= 1,000."""
    table, _, _ = planted_study(
        PLANTED,
        bases={"s": BASES["s"], "l": BASES["l"]},
        ns=(4, 16, 64, 256, 1024, 4096),
        n_items=1000,
        epochs=(5.0,),
        per_item=False,
        rng=0,
    )
    flat = (
        table["ability"].isin(["ethics", "role_play"])
        & (table["split"] == "valid")
        & (table["construction"] == "curated")
    )
    level = table.loc[flat, "ability"].map({"ethics": 45.0, "role_play": 66.0})
    table.loc[flat, "score"] = level + 3.0 * (table.loc[flat, "n_per_ability"] == 64)
    path = tmp_path_factory.mktemp("planted") / "results.csv"
    table.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def planted(study_csv):
    options = Options(
        budget=10_000,
        policies=("reconstruct", "maximum", "marginal"),
        pools=DOIT_FULL,
        pool="full",
        settings=replace(SETTINGS, replicates=100),
    )
    return make(study_csv, options)


@pytest.mark.slow
def test_reconstruct_is_the_shipped_recipe_on_the_real_pools(planted):
    groups = planted.evidence.groups["group"]
    assert groups["ethics"] == groups["role_play"] == "resistant_both"
    assert groups["creative_writing"] == "saturating"
    assert planted.evidence.groups.loc["creative_writing", "saturation_n"] >= 1000
    shipped = resolve_counts(load_mix(REPO / "recipes" / "mixes" / "reconstruct.yaml"), DOIT_FULL)
    got = planted.allocations["reconstruct"].counts
    assert got == shipped
    assert got == dict(
        DOIT_FULL,
        ethics=64,
        role_play=64,
        creative_writing=1000,
        biology=1042,
        history=1305,
        code=1305,
        chinese=1305,
        understanding=1305,
        reasoning=1305,
        math=1305,
    )


@pytest.mark.slow  # > 10 s: test-fast stays under 4 minutes
def test_reconstruct_cuts_size_driven_to_its_best_n_and_harmed_by_data_to_its_floor(tmp_path):
    """The planted world of design b (3 bases x 8, 400 items, 2 seeds): its harmful code and
    size-only understanding decided on valid as planted; the rest share what is left. (The
    world as it was before the saturating kind: history smooth, so its draws are those this
    test was written on.)"""
    kinds = {**syn.DEFAULT_KINDS, "history": "smooth"}
    world = syn.planted_world("b", kinds, seed_sd=0.0, rng=0)
    options = Options(
        budget=2000,
        policies=("reconstruct",),
        pools=dict.fromkeys(world.truth["ability"], 1000),
        settings=replace(SETTINGS, replicates=100),
    )
    result = make(world.write(tmp_path / "study"), options)
    groups = result.evidence.groups["group"]
    assert (groups["code"], groups["understanding"]) == ("harmed_by_data", "size_driven")
    counts, best = result.allocations["reconstruct"].counts, result.evidence.best_n
    for a, g in groups.items():
        if g == "harmed_by_data":
            assert counts[a] == 1, a  # its floor: more data lowers it
        elif g in ("size_driven", "resistant_both"):
            assert counts[a] == best[a], a  # data does not help: its best observed n
    rest = [
        counts[a] for a, g in groups.items() if g not in policies.CUT_TO_BEST + policies.AT_FLOOR
    ]
    assert sum(counts.values()) == 2000 and max(rest) - min(rest) <= 1


@pytest.mark.slow
def test_maximum_and_marginal_handle_resistant_and_saturating_abilities(planted):
    maximum = planted.allocations["maximum"].counts
    assert maximum == dict(DOIT_FULL, ethics=64, role_play=64)  # the same caps, every other pool
    assert not planted.allocations["maximum"].equal_budget
    marginal = planted.allocations["marginal"].counts
    assert sum(marginal.values()) == 10_000
    assert all(1 <= marginal[k] <= DOIT_FULL[k] for k in DOIT_FULL)
    resistant = planted.evidence.groups["data_class"] == "resistant"
    assert set(resistant[resistant].index) == {"ethics", "role_play"}
    said = planted.allocations["marginal"].notes
    assert not any("resistant" in n for n in said)  # no floor by rule (#32)
    assert marginal["creative_writing"] < 1000  # past its plateau the budget goes elsewhere
    table = planted.table.set_index(["policy", "ability"])
    assert table.loc[("marginal", "macro"), "gain_lo"] > 0  # predicted to beat uniform
    assert table.loc[("uniform", "macro"), "gain"] == 0


@pytest.mark.slow
def test_floors_caps_and_weights_bind_every_equal_budget_policy(planted):
    study = planted.evidence.analysis  # the same fits, other bounds
    options = Options(
        settings=study.settings,
        budget=6000,
        policies=("reconstruct", "marginal"),
        pools=DOIT_FULL,
        pool="full",
        floors={"ethics": 100, "math": 700},
        caps={"reasoning": 400, "understanding": 500},
        weights={"code": 3.0},
    )
    result = make(study, options)
    for name, alloc in result.allocations.items():
        c = alloc.counts
        assert sum(c.values()) == 6000, name
        assert c["ethics"] >= 100 and c["math"] >= 700, name
        assert c["reasoning"] <= 400 and c["understanding"] <= 500, name
        assert all(1 <= c[k] <= DOIT_FULL[k] for k in c), name
    weighted = make(study, dataclasses.replace(options, weights={}, policies=("marginal",)))
    assert (
        result.allocations["marginal"].counts["code"]
        > weighted.allocations["marginal"].counts["code"]
    )


@pytest.mark.slow
def test_outputs_are_mixes_doit_trains_on_with_provenance(planted, tmp_path):
    written = write(planted, tmp_path)
    assert (tmp_path / "curriculum.csv") in written and (tmp_path / "curriculum.html").is_file()
    for policy, alloc in planted.allocations.items():
        spec = load_mix(tmp_path / "mixes" / f"{policy}-10000.yaml")
        assert resolve_counts(spec, DOIT_FULL) == {k: n for k, n in alloc.counts.items() if n}
        assert spec.source == "full"
        assert {"study", "rule", "policy", "budget", "fits_sha256"} <= set(spec.provenance)
        assert spec.provenance["split"] == "valid" and spec.provenance["policy"] == policy


# --- the transfer term --------------------------------------------------------------------------
def test_transfer_share_comes_from_the_loo_cells_and_is_ignored_without_them(tmp_path):
    curves = {
        "biology": Curve(a=-2.5, b_data=0.6, transference=0.6),
        "code": Curve(a=-2.5, b_data=0.6, transference=0.0),
        "ethics": Curve(a=-8.0, b_data=0.0, b_size=0.0),
    }  # at chance: no gain
    pools = {k: 1000 for k in curves}
    with_loo, _, _ = planted_study(
        curves,
        bases={"s": BASES["s"]},
        n_items=400,
        loo_ns=(256,),
        epochs=(5.0,),
        per_item=False,
        rng=1,
    )
    with_loo.to_csv(tmp_path / "loo.csv", index=False)
    ev = gather(
        tmp_path / "loo.csv",
        Options(budget=600, pools=pools, settings=replace(SETTINGS, replicates=100)),
    )
    t = ev.model.transfer
    lo, hi = t["biology"].ci
    assert lo <= 0.6 <= hi and abs(t["code"].share) < 0.15
    assert t["ethics"].share == 0 and "includes 0" in t["ethics"].note  # no gain to share
    # the form is exact at the cells it is fitted on: a uniform cell scores U(n)
    point, _ = ev.model.predict(dict.fromkeys(curves, 256))
    u = [100 * float(np.asarray(ev.model.curves[k].curve([256])[0])[0]) / 100 for k in curves]
    assert point == pytest.approx(u)
    plain = with_loo[with_loo["excluded_ability"].isna()]
    plain.to_csv(tmp_path / "plain.csv", index=False)
    ev = gather(
        tmp_path / "plain.csv",
        Options(budget=600, pools=pools, settings=replace(SETTINGS, replicates=50)),
    )
    assert not ev.model.uses_transfer and any("transfer ignored" in n for n in ev.notes)
    with pytest.raises(CurriculumError, match="data.loo"):
        gather(tmp_path / "plain.csv", Options(budget=600, pools=pools, transfer="on"))


# --- regression ----------------------------------------------------------------------------------
def test_regression_recovers_a_planted_linear_law_from_40_random_mixes(tmp_path):
    keys = ab.ABILITY_KEYS
    chance = dict.fromkeys(keys, 0.25)
    rng = np.random.default_rng(3)
    own = np.array([0.08, 0.07, 0.06, 0.05, 0.04, 0.0, 0.0, 0.0, 0.01, 0.0])  # per log(1 + n)
    beta = np.diag(own) + rng.uniform(-0.004, 0.004, (10, 10))  # beta[b, a]: b's items on a
    intercept = rng.uniform(0.1, 0.2, len(keys))

    def law(counts):
        x = np.log1p([counts.get(k, 0) for k in keys])
        return dict(zip(keys, intercept + x @ beta))

    mixes = draw(dict.fromkeys(keys, 1000), 40, 2560, 1.0, seed=0)
    cells = {f"random-s0-{i:03d}": m for i, m in enumerate(mixes)}
    cells |= {f"n{n}": dict.fromkeys(keys, n) for n in (16, 64, 256)}  # the curves' cells
    law_study(law, cells, chance, n_items=2000, rng=4).to_csv(tmp_path / "law.csv", index=False)
    options = Options(
        budget=2560,
        policies=("regression",),
        pools=dict.fromkeys(keys, 1000),
        settings=replace(SETTINGS, replicates=50),
        model="linear",
        reach=10,
    )
    result = make(tmp_path / "law.csv", options)
    model = result.allocations["regression"].model
    assert np.abs(model.model.beta[1:] - 100 * beta).max() < 1.5  # points per log(1 + n)
    assert model.cv["cv_spearman"].mean() > 0.8
    # its allocation reaches >= 90% of the planted law's optimum gain over uniform
    gamma = beta.sum(1)
    best = maximise([gamma[i] * np.log1p(np.arange(1, 1001)) for i in range(10)], 2560 - 10)
    optimum = {k: 1 + x for k, x in zip(keys, best)}

    def macro(c):
        return float(np.mean(list(law(c).values())))

    uniform = dict.fromkeys(keys, 256)
    gain = macro(result.allocations["regression"].counts) - macro(uniform)
    assert gain >= 0.9 * (macro(optimum) - macro(uniform)) > 0.01


@pytest.mark.slow  # > 10 s: test-fast stays under 4 minutes
def test_regression_needs_random_mixes_and_lightgbm_is_an_extra(tmp_path, study_csv):
    with pytest.raises(CurriculumError, match="random_mixes"):
        make(
            study_csv,
            Options(
                budget=2560,
                policies=("regression",),
                pools=DOIT_FULL,
                settings=replace(SETTINGS, replicates=20),
            ),
        )
    keys = ab.ABILITY_KEYS
    cells = {
        f"random-s0-{i:03d}": m
        for i, m in enumerate(draw(dict.fromkeys(keys, 1000), 24, 2560, 1.0, seed=1))
    }
    cells |= {f"n{n}": dict.fromkeys(keys, n) for n in (16, 64, 256)}

    def law(counts):
        return {k: 0.3 + 0.03 * np.log1p(counts.get(k, 0)) for k in keys}

    law_study(law, cells, dict.fromkeys(keys, 0.25), rng=5).to_csv(tmp_path / "m.csv", index=False)
    options = Options(
        budget=2560,
        policies=("regression",),
        pools=dict.fromkeys(keys, 1000),
        settings=replace(SETTINGS, replicates=20),
        model="lightgbm",
    )
    if lightgbm_module() is None:  # the extra is not installed: one line naming the fix
        with pytest.raises(CurriculumError, match=r"lightgbm is not installed.*--model linear"):
            make(tmp_path / "m.csv", options)
    else:  # installed: the trees are fitted, cross-validated and searched
        alloc = make(tmp_path / "m.csv", options).allocations["regression"]
        assert alloc.model.kind == "lightgbm" and sum(alloc.counts.values()) == 2560
        assert set(alloc.model.cv["model"]) == {"lightgbm"}


def test_a_target_beyond_the_largest_base_is_extrapolated_with_the_held_out_error(tmp_path):
    curves = {
        "biology": Curve(a=-2.5, b_data=0.5, b_size=0.4),
        "code": Curve(a=-2.0, b_data=0.3, b_size=0.2),
        "ethics": Curve(a=-1.0, b_data=0.0, b_size=0.0),
    }
    table, _, _ = planted_study(
        curves, bases=BASES, ns=(4, 16, 64), n_items=300, epochs=(5.0,), per_item=False, rng=2
    )
    table.to_csv(tmp_path / "sizes.csv", index=False)
    options = Options(
        budget=150,
        pools=dict.fromkeys(curves, 100),
        settings=replace(SETTINGS, replicates=30),
        params=4 * BASES["l"],
    )
    result = make(tmp_path / "sizes.csv", options)
    note = next(n for n in result.notes if "beyond the largest base" in n)
    assert "held-out largest-base prediction error" in note
    assert result.evidence.target == f"params={4 * BASES['l']:g}"
    largest = make(tmp_path / "sizes.csv", dataclasses.replace(options, params=None))

    def uniform_macro(r):
        return r.table.set_index(["policy", "ability"]).loc[("uniform", "macro"), "predicted"]

    assert uniform_macro(result) > uniform_macro(largest)  # a larger base: higher scores
    flat = {k: Curve(a=-1.0, b_data=0.0, b_size=0.0, transference=0.0) for k in ("math", "ethics")}
    table, _, _ = planted_study(
        flat,
        bases={"s": BASES["s"]},
        ns=(4, 16, 64),
        n_items=2000,
        epochs=(5.0,),
        per_item=False,
        rng=0,
    )
    table.to_csv(tmp_path / "flat.csv", index=False)
    alloc = make(
        tmp_path / "flat.csv",
        Options(
            budget=100, pools=dict.fromkeys(flat, 100), settings=replace(SETTINGS, replicates=30)
        ),
    ).allocations["marginal"]
    # flat abilities are not floored by rule (#32): their small-n values compete like any other
    assert sum(alloc.counts.values()) == 100 and min(alloc.counts.values()) > 1
    assert not any("resistant" in n for n in alloc.notes)


def test_a_trained_arms_seed_draws_follow_the_seed_correlation():
    """`crossfit.arm_noise`: one run's seed draw moves its abilities together at seed_corr 1 and
    (nearly) independently at 0, each ability by the same spread either way."""
    from types import SimpleNamespace

    import pandas as pd

    from doit.analysis.curriculum import crossfit

    abilities = ("biology", "history", "code")
    table = pd.DataFrame({"ability": abilities, "seed_sd": [0.5, 0.5, 0.5]})
    draws = {}
    for corr in (1.0, 0.0):
        counts = SimpleNamespace(seed_table=table, seed_corr=corr)
        ev = SimpleNamespace(
            analysis=SimpleNamespace(counts=counts),
            abilities=abilities,
            heldout={},
            model=SimpleNamespace(grid_max=256),
        )
        point = np.full(3, 50.0)
        draws[corr] = crossfit.arm_noise(ev, dict.fromkeys(abilities, 64), point, 4000, 1)
    shared, apart = (np.corrcoef(draws[c].T)[np.triu_indices(3, 1)] for c in (1.0, 0.0))
    assert np.all(shared > 0.99) and np.all(np.abs(apart) < 0.1), (shared, apart)
    ratio = draws[0.0].std(0) / draws[1.0].std(0)
    assert np.all((ratio > 0.9) & (ratio < 1.1)), ratio
