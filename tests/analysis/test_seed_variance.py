"""Training-seed variance in every interval (issue #29, item 2), on the planted world (per-item
difficulty, a per-cell seed effect of 0.4 logit, untuned scores off chance, floors and ceilings
inside (0, 1)): a prior covers single-seed studies, two seeds are estimated and not halved, a
difference of two trainings of one recipe carries both, and a study says what it omits."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

from doit.analysis import cli, limits, settings, summary
from doit.analysis.bootstrap import ITEMS, SEEDS, Z, bootstrap_counts, prior_phrase
from doit.analysis.fits import fit_grid
from doit.analysis.pipeline import Analysis
from doit.analysis.select import select_checkpoints
from doit.analysis.sensitivity import sensitivities
from doit.analysis.synthetic import Design, _doublings, planted_world

PLANTED_SD = 0.4  # logit, per cell (the seed effect)
SMOOTH = {"biology": "smooth", "history": "smooth"}
STUDIES = 40


def reduced(seeds: int, items: int = 100, ns=(0, 4, 16, 64, 256)) -> Design:
    """Design (a)'s two bases and n grid, one scored epoch."""
    return Design("r", {"xs": 10_000_000, "s": 22_000_000}, ns, items, seeds, (5.0,))


def share(hits) -> tuple[float, float, float]:
    """The share of ``hits`` and its exact binomial 95% interval."""
    k, n = int(np.sum(hits)), len(hits)
    return k / n, beta.ppf(0.025, k, n - k + 1), beta.ppf(0.975, k + 1, n - k)


def on_score_scale(world, h: float = 1e-3) -> dict[str, float]:
    """The planted seed SD on the scale bootstrap.py measures it (the logit of a cell's score):
    the expected score's slope in a shift of every item's logit, over p (1 - p), pooled over
    the trained points as the estimator pools them."""
    out = {}
    for ability, lev in world.levers.items():
        up, down = replace(lev, alpha=lev.alpha + h), replace(lev, alpha=lev.alpha - h)
        moved, spread = [], []
        for doublings in _doublings(world.design).values():
            for n in world.design.trained_ns:
                p = lev.expected(doublings, n)
                moved.append((up.expected(doublings, n) - down.expected(doublings, n)) / (2 * h))
                spread.append(p * (1 - p))
        out[ability] = world.seed_sd * np.sqrt(np.sum(np.square(moved)) / np.sum(np.square(spread)))
    return out


def seed_sd_ratio(pairs) -> float:
    """The estimated seed SD over the planted one, as a root mean square over (estimated,
    planted) pairs: a variance's method-of-moments estimate is unbiased, its square root is
    not (E sqrt < sqrt E on 4 df)."""
    estimated, planted = np.asarray(pairs, float).T
    return float(np.sqrt(np.sum(estimated**2) / np.sum(planted**2)))


def prior_coverage(counts=bootstrap_counts, seed_sd=PLANTED_SD, studies=STUDIES) -> list:
    """One seed per point, the prior ``seed_sd``: does each data sensitivity's 95% interval
    cover the planted one? (bench/seed_variance.py prints it for the engine before too.)"""
    hits = []
    for r in range(studies):
        world = planted_world(reduced(1), SMOOTH, PLANTED_SD, rng=r)
        found = counts(
            select_checkpoints(world.table, "last"), world.items, 100, r, seed_sd=seed_sd
        )
        found = sensitivities(fit_grid(found))[0].merge(
            world.truth, on="ability", suffixes=("", "_planted")
        )
        true = found["data_sensitivity_planted"]
        hits += list(
            (found["data_sensitivity_lo"] <= true) & (true <= found["data_sensitivity_hi"])
        )
    return hits


def point_coverage(counts=bootstrap_counts, studies=STUDIES) -> tuple[list, list]:
    """Two seeds per point, 400 items: does each trained point's 95% interval cover its
    planted expected score; and per ability (estimated, planted) seed SD (score scale)."""
    hits, ratio = [], []
    for r in range(studies):
        world = planted_world(reduced(2, 400, (0, 16, 256)), SMOOTH, PLANTED_SD, rng=r)
        found = counts(select_checkpoints(world.table, "last"), world.items, 200, r)
        if hasattr(found, "seed_table"):
            planted, table = on_score_scale(world), found.seed_table
            ratio += [(sd, planted[a]) for a, sd in zip(table["ability"], table["seed_sd"])]
        pts = found.points
        for i in np.flatnonzero((pts["n_per_ability"] > 0).to_numpy()):
            _, lo, hi = found.score(i).ci()
            row = pts.iloc[i]
            hits.append(
                lo <= world.expected(row["ability"], row["base"], row["n_per_ability"]) <= hi
            )
    return hits, ratio


def same_recipe_coverage(counts=bootstrap_counts, studies=STUDIES) -> list:
    """Four seeds per point split into two 'mixes' of one recipe (seeds 0-1 and 2-3): does the
    paired difference's 95% interval cover its true 0?"""
    hits = []
    for r in range(studies):
        world = planted_world(reduced(4, 400, (0, 16, 256)), SMOOTH, PLANTED_SD, rng=r)
        table = world.table.assign(mix=np.where(world.table["seed"] < 2, "a", "b"))
        found = counts(select_checkpoints(table, "last"), world.items, 200, r)
        pts = found.points
        for i in np.flatnonzero(((pts["mix"] == "a") & (pts["n_per_ability"] > 0)).to_numpy()):
            row = pts.iloc[i]
            where = dict(base=row["base"], n_per_ability=row["n_per_ability"], mix="b")
            _, lo, hi = found.difference(i, found.column(row["ability"], **where)).ci()
            hits.append(lo <= 0 <= hi)
    return hits


@pytest.mark.slow
def test_one_seed_with_the_prior_covers_the_planted_data_sensitivity():
    """One seed per point: without a prior the intervals cover items only (0.84 [0.74, 0.91]
    of 80 here: bench/seed_variance.py); with the prior at the planted value, >= 90%."""
    covered, low, _ = share(prior_coverage())
    assert covered >= 0.9, (covered, low)
    world = planted_world(reduced(1), SMOOTH, PLANTED_SD, rng=0)
    counts = bootstrap_counts(world.table, world.items, 20, 0, seed_sd=PLANTED_SD)
    assert counts.resamples == prior_phrase(PLANTED_SD)


@pytest.mark.slow
def test_two_seeds_are_estimated_and_not_halved():
    """The estimated seed SD is the planted one (on the score's logit scale), and each point's
    interval covers its planted score in >= 90% (two seeds resampled with replacement halved
    their variance: 0.86 [0.82, 0.90] of 320)."""
    hits, pairs = point_coverage()
    assert 0.8 < seed_sd_ratio(pairs) < 1.2, seed_sd_ratio(pairs)
    covered, low, _ = share(hits)
    assert covered >= 0.9, (covered, low)
    world = planted_world(reduced(2, 400, (0, 16, 256)), SMOOTH, PLANTED_SD, rng=0)
    counts = bootstrap_counts(world.table, world.items, 20, 0)
    assert counts.resamples == SEEDS
    assert (counts.seed_table["seed_df"] == 2 * 2).all()  # 2 bases x 2 n, one df each


@pytest.mark.slow
def test_a_difference_of_two_trainings_of_one_recipe_carries_both_seeds():
    """Two trainings of one recipe: their difference, truly 0, is covered in >= 90% (seeds
    resampled: 0.88 [0.84, 0.91] of 320). Copies of one training under two names (the
    curriculum's reconstruct that trained uniform's mix) get an interval of two seed draws,
    where items alone give 0 +- 0."""
    covered, low, _ = share(same_recipe_coverage())
    assert covered >= 0.9, (covered, low)

    world = planted_world(reduced(2, 400, (0, 16, 256)), SMOOTH, PLANTED_SD, rng=0)
    study = world.table.assign(mix="uniform")
    trained = study[study["n_per_ability"] == 256]
    copy = trained.assign(cell=trained["cell"] + "-copy", mix="reconstruct")
    items = world.items[world.items["cell"].isin(trained["cell"])]
    items = pd.concat([world.items, items.assign(cell=items["cell"] + "-copy")])
    both = select_checkpoints(pd.concat([study, copy], ignore_index=True), "last")
    counts = bootstrap_counts(both, items, 400, 0)
    sd = counts.seed_table.set_index("ability")["seed_sd"]
    for ability in SMOOTH:
        i = counts.column(ability, base="s", n_per_ability=256, mix="reconstruct")
        j = counts.column(ability, base="s", n_per_ability=256, mix="uniform")
        diff = counts.difference(i, j)
        p = counts.points["score"].iloc[j] / 100
        two_seeds = 100 * p * (1 - p) * sd[ability]  # sqrt(2 cells x 1/2 of a 2-seed point)
        assert diff.point == 0 and diff.reps.std() > 0.8 * two_seeds
        lo, hi = diff.interval()
        assert lo < -Z * 0.7 * two_seeds and hi > Z * 0.7 * two_seeds
    items_only = bootstrap_counts(both[both["seed"] == 0], items, 100, 0)
    assert items_only.resamples == ITEMS
    i = items_only.column("biology", base="s", n_per_ability=256, mix="reconstruct")
    j = items_only.column("biology", base="s", n_per_ability=256, mix="uniform")
    assert items_only.difference(i, j).ci() == (0.0, 0.0, 0.0)


def test_the_component_is_estimated_with_and_without_per_item_rows():
    """Ten two-seed worlds: the estimate (item-outcome noise within items, or binomial from
    the counts alone) is the planted SD on the score's scale, inside its own interval; the
    untuned bases (no training) get no seed draw."""
    found = {"paired": [], "binomial": []}
    for r in range(10):
        world = planted_world(reduced(2, 400, (0, 16, 256)), SMOOTH, PLANTED_SD, rng=r)
        selected, planted = select_checkpoints(world.table, "last"), on_score_scale(world)
        for name, items in (("paired", world.items), ("binomial", None)):
            counts = bootstrap_counts(selected, items, 50, r)
            table = counts.seed_table
            assert counts.resamples == SEEDS
            assert (
                (table["seed_sd_lo"] <= table["seed_sd"])
                & (table["seed_sd"] <= table["seed_sd_hi"])
            ).all()
            found[name] += [(sd, planted[a]) for a, sd in zip(table["ability"], table["seed_sd"])]
        one_seed = bootstrap_counts(selected[selected["seed"] == 0], world.items, 50, r)
        paired = bootstrap_counts(selected, world.items, 50, r)
        assert one_seed.resamples == ITEMS  # the same item draws, no seed draws
        untuned = [
            np.flatnonzero(c.points["n_per_ability"].eq(0).to_numpy()) for c in (paired, one_seed)
        ]
        assert paired.scores(untuned[0]).reps == pytest.approx(one_seed.scores(untuned[1]).reps)
    for pairs in found.values():
        assert 0.75 < seed_sd_ratio(pairs) < 1.25, seed_sd_ratio(pairs)


@pytest.fixture(scope="module")
def one_seed_study(tmp_path_factory):
    return planted_world(reduced(1), SMOOTH, PLANTED_SD, rng=0).write(
        tmp_path_factory.mktemp("planted") / "study"
    )


def test_a_single_seed_study_says_its_intervals_cover_items_only(one_seed_study, tmp_path):
    a = Analysis(str(one_seed_study), settings.Settings(rule="last", replicates=40))
    assert a.counts.resamples == ITEMS
    assert "Intervals cover item sampling only" in summary.headline(a)
    assert any("cover item sampling only" in line for line in a.limits)
    for table in (a.fits, a.sensitivity, a.predictions, a.features):
        assert set(table["resamples"]) == {ITEMS}
    lines = summary.summary_lines(a, None, 60.0, "report.html")
    assert lines[0].endswith("intervals resample items")

    prior = Analysis(
        str(one_seed_study), settings.Settings(rule="last", replicates=40, seed_sd=0.3)
    )
    assert set(prior.sensitivity["resamples"]) == {prior_phrase(0.3)} == {prior.counts.resamples}
    assert any("rest on the seed prior --seed-sd 0.3" in line for line in prior.limits)
    assert "seed prior (seed_sd=0.3)" in summary.headline(prior)
    wide, narrow = (
        x.sensitivity.set_index("ability").eval("data_sensitivity_hi - data_sensitivity_lo")
        for x in (prior, a)
    )
    assert (wide > narrow).all()
    wide, narrow = (x.predictions.eval("hi - lo").to_numpy() for x in (prior, a))
    # the held-out cell's own seed draw widens them; an interval pinned at 100 by the clip
    # may only shift (40 replicates: one such cell kept its width to the last digit)
    assert len(wide) and (wide >= narrow).all() and wide.mean() > narrow.mean() + 5


def test_the_seed_sd_flag_is_every_commands_and_refuses_a_negative(one_seed_study, tmp_path):
    out = tmp_path / "out"
    assert cli.main(["fit", str(one_seed_study), "--out", str(out), "--rule", "last",
                     "--replicates", "20", "--seed-sd", "0.25"]) == 0  # fmt: skip
    written = pd.read_csv(out / "sensitivity.csv")
    assert set(written["resamples"]) == {prior_phrase(0.25)}
    assert written["seed_sd"].eq(0.25).all() and written["seed_df"].eq(0).all()
    with pytest.raises(SystemExit) as refused:
        cli.main(["fit", str(one_seed_study), "--out", str(tmp_path / "x"), "--seed-sd", "-1"])
    assert refused.value.code == 2
    assert not (tmp_path / "x").exists()


def test_seed_effects_correlated_below_one_narrow_a_macro_and_leave_each_ability(
    one_seed_study,
):
    """``seed_corr``: 1 moves every ability of a cell with one draw; 0 gives each its own, so a
    macro over K abilities carries about 1/K of the seed variance (here K = 2), and each ability the same."""
    runs = {
        c: Analysis(
            str(one_seed_study),
            settings.Settings(rule="last", replicates=400, seed_sd=1.0, seed_corr=c),
        ).counts
        for c in (1.0, 0.0)
    }
    pts = runs[1.0].points
    top = pts[pts["n_per_ability"] == pts["n_per_ability"].max()]
    base = top["base"].iloc[0]
    abilities = sorted(top.loc[top["base"] == base, "ability"].unique())
    assert len(abilities) >= 2
    sd = {}
    for c, counts in runs.items():
        cols = [
            counts.column(a, base=base, n_per_ability=top["n_per_ability"].max()) for a in abilities
        ]
        reps = np.column_stack([counts.scores(i).reps for i in cols])
        sd[c] = (reps.std(0, ddof=1), reps.mean(1).std(ddof=1))
    each = sd[0.0][0] / sd[1.0][0]
    assert np.all((each > 0.8) & (each < 1.25)), each  # one ability: the same seed variance
    assert sd[0.0][1] < 0.85 * sd[1.0][1], (sd[0.0][1], sd[1.0][1])  # the macro: less of it
    assert "seed effects correlated 0 across abilities" in runs[0.0].resamples
    assert "correlated" not in runs[1.0].resamples
    assert any("correlated 0 across its abilities" in x for x in limits.seed_notes(runs[0.0]))
    assert not any("correlated" in x for x in limits.seed_notes(runs[1.0]))
    with pytest.raises(ValueError, match="seed_corr 1.5"):
        settings.Settings(seed_corr=1.5)
