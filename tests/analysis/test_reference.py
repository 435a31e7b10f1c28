"""The reference study's grading (doit.analysis.reference) on a small planted study: three
sizes of one architecture, a fourth base of the smallest size standing in for ResFormer,
three seeds, learnable abilities whose half-rise n grows with a planted dose."""

import numpy as np
import pytest

from doit.analysis import reference as ref
from doit.analysis.bootstrap import Z
from doit.analysis.pipeline import Analysis
from doit.analysis.settings import Settings, base_names
from doit.analysis.study import StudyRows
from doit.analysis.synthetic import Curve, planted_study

LADDER = {"s": 10_000_000, "l": 80_000_000}
REPLICATES = 40
NS = (4, 16, 64, 256, 1024)
OTHER = "vr"  # the same size as s and the same planted curves: its differences are 0
# ability -> (planted dose, curve): halfway at n = 8, 32, 128 on s (log4 n = -a / b_data)
LEARNABLE = {
    "creative_writing": (1, Curve(a=-1.8, b_data=1.2, b_size=0.3)),
    "code": (3, Curve(a=-3.0, b_data=1.2, b_size=0.3)),
    "history": (16, Curve(a=-4.2, b_data=1.2, b_size=0.3)),
}
FLAT = Curve(a=-4.0, b_data=0.0, b_size=0.0)  # role_play: at chance, under its 50 plateau


def truth() -> dict:
    levers = {a: {"dose": d, "learnable": True} for a, (d, _) in LEARNABLE.items()}
    levers["role_play"] = {"dose": 5, "learnable": False}
    for v in levers.values():
        v["needs_pretrained_facts"] = False
    bounds = {a: {"floor": 25.0, "ceiling": 100.0} for a in levers}
    bounds["role_play"]["ceiling"] = 50.0
    return {"abilities": levers, "formulations": {"text": bounds}}


@pytest.fixture(scope="module")
def study():
    curves = {a: c for a, (_, c) in LEARNABLE.items()} | {"role_play": FLAT}
    table, items, _ = planted_study(
        curves, {**LADDER, OTHER: LADDER["s"]}, NS, 200, 3, epochs=(5.0,), rng=3
    )
    return StudyRows(table, items, table, ())


def analysis(study, **settings):
    return Analysis("planted", Settings(replicates=REPLICATES, **settings), study=study)


def test_the_base_filter_fits_the_ladder_only_and_names_an_unknown_base(study):
    from doit.analysis.study import only_bases

    rows, items = only_bases(study.table, study.items, tuple(LADDER), "planted")
    assert set(rows["base"]) == set(LADDER) and set(items["cell"]) <= set(rows["cell"])
    with pytest.raises(ValueError, match="planted: --bases: no rows of base"):
        only_bases(study.table, study.items, ("s", "resformer_s"), "planted")
    assert base_names("vanilla_xs, vanilla_s") == ("vanilla_xs", "vanilla_s")
    with pytest.raises(ValueError, match="--bases"):
        base_names("a,,b")


def test_grading_recovers_the_planted_levers(study):
    ladder = analysis(_ladder(study))
    planted = ref.truth_of(truth(), "text")
    dose = ref.dose_recovery(ladder.curves, planted)
    assert dose["abilities"] == sorted(LEARNABLE) and dose["spearman"] == 1.0
    assert dose["beyond_grid"] == []
    h = dose["half_rise"]
    assert h["creative_writing"] < h["code"] < h["history"]
    assert dose["spearman_lo"] <= 1.0 == dose["spearman_hi"] and dose["replicates"] == REPLICATES
    decided = ref.classes_decided(ladder.sensitivity)
    assert set(LEARNABLE) <= set(decided["data"]) and decided["of"] == 4
    checks = ref.bounds(ladder.counts, ladder.fits, planted)
    assert len(checks) and not checks["contradicted"].any()
    chance = checks[checks["bound"] == ref.CHANCE]
    assert len(chance) and chance["p"].isna().all()  # a floor is reported, never a test
    lowered = planted.assign(ceiling=np.where(planted["ability"] == "code", 30.0, 100.0))
    assert ref.bounds(ladder.counts, ladder.fits, lowered)["contradicted"].any()
    flat = ref.plateaus(ladder.counts, planted, tuple(LADDER)).set_index("ability")
    assert not flat.loc["role_play", "reached"] and not flat.loc["role_play", "exceeded"]


def test_holm_steps_down_and_skips_what_is_not_a_test():
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.005])
    assert ref.holm(p, 0.05).tolist() == [True, False, False, False, True]
    assert not ref.holm(np.full(3, np.nan), 0.05).any()


def test_a_world_at_its_ceiling_is_rarely_contradicted_and_one_above_it_is():
    """400 simulated studies of 30 points whose expected score is exactly the ceiling (a
    coin-flip ability at 50, 400 items a point): a 95% interval per point flags some point
    in about half the studies (the rule before), the family-wise rule in about 5%; a point
    six SEs above the ceiling is still found."""
    rng = np.random.default_rng(0)
    items, points, studies = 400, 30, 400
    scores = rng.binomial(items, 0.5, (studies, points)) / items * 100

    def checks(study):
        se = np.sqrt(study * (100 - study) / items)
        rows = [
            ref._bound_row("role_play", "", "ceiling", 50.0, v, v - Z * e, v + Z * e)
            for v, e in zip(study, se)
        ]
        beyond = np.array([r["beyond"] for r in rows])
        return beyond, ref.holm(np.array([r["p"] for r in rows]), ref.FAMILY_LEVEL)

    pointwise, family = zip(*map(checks, scores))
    assert np.mean([b.any() for b in pointwise]) > 0.35
    assert np.mean([f.any() for f in family]) <= 0.08
    above = scores[0].copy()
    above[3] = 50 + 6 * np.sqrt(2500 / items)
    assert checks(above)[1][3]


def test_architecture_differences_are_paired_and_cover_the_planted_zero(study):
    diffs = ref.architecture_differences(analysis(study).counts, "s", [OTHER], (0, *NS))
    mean = diffs[diffs["n"] == ref.OVER_N].set_index("ability")
    assert set(mean.index) == {*LEARNABLE, "role_play", ref.MACRO}
    assert (mean["lo"] < 0).all() and (mean["hi"] > 0).all()
    untuned = diffs[(diffs["n"] == 0) & (diffs["ability"] == "code")].iloc[0]
    assert untuned["lo"] <= untuned["diff"] <= untuned["hi"]


@pytest.mark.slow  # ~6 s on 2 cores (50 s under the suite's load): two halves' fits
def test_split_half_agrees_on_one_planted_world(study):
    halves = ref.split_half(analysis(_ladder(study)), ({0, 1}, {2}))
    assert len(halves) == 2 * 4 and np.isfinite(halves["z"]).sum() >= 6
    assert halves["agree"].mean() >= 0.75  # both halves measure the same curves


def _ladder(study):
    from doit.analysis.study import only_bases

    table, items = only_bases(study.table, study.items, tuple(LADDER), "planted")
    return StudyRows(table, items, table, ())


def test_a_one_seed_study_is_graded_against_the_reference_and_its_restricted_fits(study):
    """The demo's summary lines against a recorded reference (here: the planted study's three
    seeds; the graded study: its seed 0). A reference whose fits sit 10 points away agrees
    with none of them; a missing reference is one line that says so."""
    from doit.analysis import summary

    ladder = dict(bases=tuple(LADDER))
    full = analysis(study, **ladder)
    small = Analysis(
        "one seed", full.settings, study=ref.seed_half(full.rows, {0}), ground_truth=truth()
    )
    restricted = ref.estimates(full)
    graded = ref.against_reference(small, full.sensitivity, restricted)
    assert set(graded["agree"]) <= set(graded["decided"])
    assert graded["of"] == {"data": 4, "size": 4} and len(graded["fits"]["data"]) >= 3
    shifted = restricted.assign(value=restricted["value"] + 10)
    assert ref.against_reference(small, full.sensitivity, shifted)["fits"]["data"] == []

    lines = summary.reference_lines(small, (full.sensitivity, restricted), "text")
    decided, agree = len(graded["decided"]), len(graded["agree"])
    assert lines[0].startswith(
        f"against the reference ({ref.REFERENCE_DIR}): data classes "
        f"decided {decided} of 4, {agree} as the reference's"
    )
    assert f"data {len(graded['fits']['data'])} of 4" in lines[0]
    assert lines[1].startswith("dose lever: Spearman") and "over 3 learnable abilities" in lines[1]
    assert summary.reference_lines(small, None, "text")[0].startswith(
        "reference study: not recorded"
    )


def test_the_seed_prior_is_read_from_the_recorded_study_and_a_bad_row_is_located(tmp_path):
    from pathlib import Path

    import pandas as pd

    from doit.grid.results import ResultsError

    repo = Path(__file__).resolve().parents[2]
    recorded = pd.read_csv(repo / ref.SEED_PRIOR_FILE).set_index(["arm", "measure"])["value"]
    prior = ref.read_seed_prior(repo / ref.SEED_PRIOR_FILE)
    assert prior.sd == pytest.approx(recorded[("demo", "seed_component_logit")])
    assert prior.corr == pytest.approx(
        np.clip(recorded[("demo+tenth+zero", "seed_component_corr")], 0, 1)
    )
    assert 0 <= prior.corr <= 1
    assert ref.read_seed_prior(tmp_path / "absent.csv") is None  # not recorded: no prior
    bad = tmp_path / "seed_noise.csv"
    corr = "demo+tenth+zero,seed_component_corr,-0.2\n"  # a negative estimate: clipped to 0
    bad.write_text(f"arm,measure,value\ndemo,seed_component_logit,0.07\n{corr}")
    assert ref.read_seed_prior(bad) == (0.07, 0.0)
    bad.write_text(f"arm,measure,value\ntenth,seed_component_logit,0.07\n{corr}")
    with pytest.raises(ResultsError, match="expected one row"):
        ref.read_seed_prior(bad)
    bad.write_text(f"arm,measure,value\n{corr}demo,seed_component_logit,-1\n")
    with pytest.raises(ResultsError, match=r"seed_noise.csv, line 3, field value: -1.0 \(sd\)"):
        ref.read_seed_prior(bad)
