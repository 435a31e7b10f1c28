"""Planted groups come back when the items give enough power; a decision per axis (harmed,
size-driven, saturating by an interval, not decidable with this design) with the power it had;
predictions cover held-out cells; Transference recovers its planted share."""

import numpy as np
import pytest

from doit.analysis.bootstrap import bootstrap_counts
from doit.analysis.features import LOO, PROXY, transference
from doit.analysis.fits import fit_grid
from doit.analysis import sensitivity
from doit.analysis.predict import predictions
from doit.analysis.select import select_checkpoints
from doit.analysis.sensitivity import sensitivities
from doit.analysis.synthetic import BASES, Curve, planted_study

PLANTED = {
    "code": (Curve(a=-2.5, b_data=0.5, b_size=0.4), "responsive_both"),
    "reasoning": (Curve(a=-2.5, b_data=0.5, b_size=0.0), "resistant_size"),
    "ethics": (Curve(a=-1.0, b_data=0.0, b_size=0.0), "resistant_both"),
    "creative_writing": (Curve(a=-3.0, b_data=2.5, b_size=0.0), "saturating"),
}


def test_planted_groups_come_back_with_enough_items():
    curves = {a: c for a, (c, _) in PLANTED.items()}
    table, items, _ = planted_study(curves, bases=BASES, n_items=1000, rng=0, epochs=(10.0,))
    sens, _ = sensitivities(fit_grid(bootstrap_counts(select_checkpoints(table), items, 300)))
    got = sens.set_index("ability")["group"].to_dict()
    assert got == {a: g for a, (_, g) in PLANTED.items()}
    assert sens["resistant_reachable_data"].all()  # powered: resistant is not underpowered
    assert (sens["mde_data"] > 2).all()  # responsive means clearing delta, not 0


def test_too_few_items_to_call_resistance_say_not_decidable_with_this_design():
    table, items, _ = planted_study(
        {"ethics": PLANTED["ethics"][0]}, n_items=15, rng=0, epochs=(10.0,)
    )
    sens, _ = sensitivities(fit_grid(bootstrap_counts(select_checkpoints(table), items, 300)))
    row = sens.iloc[0]
    assert row["group"] == "undetermined" and row["mde_size"] > 2
    for axis in ("data", "size"):  # a planted zero the design could not have called resistant
        assert not row[f"resistant_reachable_{axis}"]
        assert row[f"{axis}_class"] == "not decidable with this design"


# One design, four decisions (bases x16 apart, n = 4 ... 256): code loses 7.3 points per 4x
# items, understanding gains 8.4 with a size effect of 2.0 (on the margin), math gains only
# with size (8.7 per doubling), creative_writing saturates near n = 28.
DECISIONS = {
    "code": Curve(a=1.0, b_data=-0.4, b_size=0.0),
    "understanding": Curve(a=-1.0, b_data=0.5, b_size=0.12),
    "math": Curve(a=-1.0, b_data=0.0, b_size=0.5),
    "creative_writing": Curve(a=-3.0, b_data=2.5, b_size=0.0),
}


def decide(n_items: int, rng: int = 0):
    bases = {k: BASES[k] for k in ("s", "l")}
    table, items, truth = planted_study(
        DECISIONS, bases=bases, ns=(4, 16, 64, 256), n_items=n_items, rng=rng, epochs=(10.0,)
    )
    counts = bootstrap_counts(select_checkpoints(table), items, 300)
    sens, reps = sensitivities(fit_grid(counts))
    return sens.set_index("ability"), reps, truth.set_index("ability")


@pytest.fixture(scope="module")
def decided():
    return decide(1000)


def test_a_data_effect_below_minus_delta_is_harmed_whatever_the_size_axis(decided):
    sens, _, truth = decided
    code = sens.loc["code"]
    assert truth.loc["code", "data_sensitivity"] < -2 and code["data_sensitivity_hi"] < -2
    assert code["data_class"] == "harmed" and code["group"] == "harmed_by_data"


def test_a_clear_data_effect_keeps_its_class_when_size_is_undecided(decided):
    sens, _, _ = decided
    u = sens.loc["understanding"]
    assert u["data_sensitivity_lo"] > 2 and u["size_sensitivity_lo"] < 2 < u["size_sensitivity_hi"]
    assert (u["data_class"], u["size_class"]) == ("responsive", "undetermined")
    assert u["group"] == "undetermined"  # no group is decided by data responsiveness alone


def test_data_resistant_and_size_responsive_is_size_driven(decided):
    sens, _, _ = decided
    math = sens.loc["math"]
    assert -2 < math["data_sensitivity_lo90"] and math["data_sensitivity_hi90"] < 2
    assert (math["data_class"], math["size_class"]) == ("resistant", "responsive")
    assert math["group"] == "size_driven"


def test_saturating_needs_saturation_n_s_interval_inside_the_grid(decided):
    sens, _, _ = decided
    cw = sens.loc["creative_writing"]
    assert cw["saturation_n_lo"] <= cw["saturation_n"] <= cw["saturation_n_hi"] <= 256
    assert cw["group"] == "saturating"
    few, _, _ = decide(150)  # the point saturates inside the grid, its interval's top does not
    cw = few.loc["creative_writing"]
    assert cw["saturation_n"] < 256 and np.isnan(cw["saturation_n_hi"])
    assert cw["data_class"] == "responsive" and cw["group"] == "resistant_size"


def test_mde_is_power_against_delta_and_one_function_gives_it(decided):
    sens, reps, _ = decided
    for a in DECISIONS:
        for axis in ("data", "size"):
            se = np.std(reps[a][axis], ddof=1)
            mde, reachable = sensitivity.power(se, 2.0)
            assert sens.loc[a, f"mde_{axis}"] == pytest.approx(mde)
            assert mde == pytest.approx(2.0 + (1.959964 + 0.841621) * se)
            assert sens.loc[a, f"resistant_reachable_{axis}"] == reachable == (1.644854 * se < 2)
    mde, reachable = sensitivity.power(np.array([0.5, 1.2, 1.3]), 2.0)
    assert mde == pytest.approx([3.4008, 5.3618, 5.6419], abs=1e-3)
    assert list(reachable) == [True, True, False]  # 1.645 x 1.3 = 2.14 >= delta


@pytest.mark.slow
def test_prediction_intervals_cover_held_out_cells_85_to_99_percent():
    covered = []
    for i in range(12):
        curves = {"biology": Curve(), "code": Curve(a=-2, b_data=0.6)}
        table, items, _ = planted_study(curves, bases=BASES, n_items=100, rng=i, epochs=(10.0,))
        pred = predictions(bootstrap_counts(select_checkpoints(table), items, 200, seed=i), i)
        assert set(pred["holdout"]) == {"largest_base", "largest_n"}
        covered += list(pred["covered"])
    assert len(covered) == 12 * 18
    assert 0.85 <= np.mean(covered) <= 0.99


def test_transference_recovers_its_planted_share_and_is_empty_without_gain():
    curves = {
        "biology": Curve(transference=0.2),
        "code": Curve(transference=0.8),
        "ethics": Curve(a=-8, b_data=0.0, b_size=0.0),
    }
    table, items, _ = planted_study(curves, n_items=400, loo_ns=(64, 256), rng=0, epochs=(10.0,))
    t = transference(bootstrap_counts(select_checkpoints(table), items, 300)).set_index("ability")
    assert set(t["transference_method"]) == {LOO}
    for a, true in (("biology", 0.2), ("code", 0.8)):
        assert t.loc[a, "transference_lo"] <= true <= t.loc[a, "transference_hi"]
    assert np.isnan(t.loc["ethics", "transference"])
    assert "includes 0" in t.loc["ethics", "transference_note"]
    table, items, _ = planted_study({"biology": Curve()}, n_items=100, rng=0, epochs=(10.0,))
    proxy = transference(bootstrap_counts(select_checkpoints(table), items, 100))
    assert proxy["transference_method"][0] == PROXY and 0 < proxy["transference"][0] < 1
