"""A decision per axis with the power it had (`doit.analysis.sensitivity`), on the planted world
(per-item difficulty, untuned scores off chance, misspecified kinds): harmed, a data class kept
beside an undecided size axis, size_driven, saturating by saturation_n's interval, the MDE
against delta from one `power(se, delta)`, and a design too small to call anything resistant.

The worlds have no training-seed effect (seed_sd 0): these tests check the decision rules on
intervals that cover, not the intervals' coverage (bench/coverage.py's)."""

from functools import cache

import numpy as np
import pytest

from doit.analysis import sensitivity
from doit.analysis import synthetic as syn
from doit.analysis.bootstrap import bootstrap_counts
from doit.analysis.fits import fit_grid
from doit.analysis.limits import out_of_reach
from doit.analysis.select import select_checkpoints
from doit.analysis.sensitivity import sensitivities

REPLICATES = 200
# The default world as these tests were written on it (history smooth, before the saturating
# kind took its place and shifted the later abilities' draws).
BEFORE_SATURATING = {**syn.DEFAULT_KINDS, "history": "smooth"}


@cache
def decided(design: str, rng: int, seed_sd: float = 0.0):
    """(sensitivity table by ability, replicates, planted truth by ability) of one world."""
    world = syn.planted_world(design, BEFORE_SATURATING, seed_sd=seed_sd, rng=rng)
    selected = select_checkpoints(world.table, rule="last")
    sens, reps = sensitivities(fit_grid(bootstrap_counts(selected, world.items, REPLICATES)))
    return sens.set_index("ability"), reps, world.truth.set_index("ability")


def test_a_data_effect_below_minus_delta_is_harmed_whatever_the_size_axis():
    sens, _, truth = decided("b", 0)  # 400 items, 3 bases x 8, 2 seeds
    code = sens.loc["code"]
    assert truth.loc["code", "kind"] == "harmful" and truth.loc["code", "data_class"] == "harmed"
    assert code["data_sensitivity_hi"] < -2
    assert code["data_class"] == "harmed" and code["group"] == "harmed_by_data"
    harmed = sens[sens["data_class"] == "harmed"]
    assert (truth.loc[harmed.index, "data_class"] == "harmed").all()  # no false harm
    assert (harmed["group"] == "harmed_by_data").all()


def test_a_clear_data_effect_keeps_its_class_when_size_is_undecided():
    sens, _, _ = decided("b", 1)
    bio = sens.loc["biology"]
    assert bio["data_sensitivity_lo"] > 2 + 8  # far above the margin
    assert bio["size_sensitivity_lo"] < 2 < bio["size_sensitivity_hi"]
    assert (bio["data_class"], bio["size_class"]) == ("responsive", "undetermined")
    assert bio["group"] == "undetermined"  # no group is decided by data responsiveness alone


def test_data_resistant_and_size_responsive_is_size_driven():
    sens, _, truth = decided("b", 0)
    u = sens.loc["understanding"]
    assert truth.loc["understanding", "kind"] == "size_only"
    assert -2 < u["data_sensitivity_lo90"] and u["data_sensitivity_hi90"] < 2
    assert (u["data_class"], u["size_class"]) == ("resistant", "responsive")
    assert u["group"] == "size_driven"
    driven = sens[sens["group"] == "size_driven"].index
    planted = truth.loc[driven, ["data_class", "size_class"]]
    assert (planted == ["resistant", "responsive"]).all(axis=None)  # no false size_driven


def saturated(n_items: int):
    """Sensitivities of two steep planted curves (both reach ~100 inside n = 1..1024)."""
    curves = {
        "role_play": syn.Curve(a=-4.0, b_data=2.5, b_size=0.0),
        "history": syn.Curve(a=-3.0, b_data=1.5, b_size=0.0),
    }
    table, items, _ = syn.planted_study(curves, n_items=n_items, ns=(1, 4, 16, 64, 256, 1024))
    counts = bootstrap_counts(select_checkpoints(table, rule="last"), items, REPLICATES)
    return sensitivities(fit_grid(counts))[0].set_index("ability")


@pytest.mark.slow  # a world of the study's design (n up to 1000): 6 s
def test_saturating_needs_saturation_n_s_interval_inside_the_grid():
    inside = saturated(400)
    for ability in ("role_play", "history"):
        row = inside.loc[ability]
        assert row["saturation_n_lo"] <= row["saturation_n"] <= row["saturation_n_hi"] <= 1024
        assert row["group"] == "saturating"  # whatever its size class (the data axis alone)
    # fewer items: more replicates choose the log-linear line; it reaches 100 inside the grid,
    # so it saturates there (before, a line never did, and the CI's top stayed open)
    history = saturated(100).loc["history"]
    assert history["saturation_n_hi"] <= 1024 and history["group"] == "saturating"
    open_top, _, planted_c1 = decided("c1", 1)
    # the planted world: biology saturates at n = 339 by the package's definition (from its
    # untuned score); its log-linear replicates reach 100 inside the grid, so the top closes
    bio, planted = open_top.loc["biology"], planted_c1.loc["biology"]
    assert planted["saturates"] and bio["saturation_n_hi"] < 1000
    assert bio["group"] == "saturating"
    for sens in (inside, open_top):
        bounded = sens[["saturation_n", "saturation_n_lo", "saturation_n_hi"]].notna().all(axis=1)
        responsive = sens["data_class"] == "responsive"
        assert ((sens["group"] == "saturating") == (bounded & responsive)).all()


def test_mde_is_power_against_delta_and_one_function_gives_it():
    sens, reps, _ = decided("b", 0)
    assert list(sens.reset_index().columns) == sensitivity.COLUMNS  # the empty table's header
    for a in sens.index:
        for axis in ("data", "size"):
            se = np.std(reps[a][axis], ddof=1)
            mde, reachable = sensitivity.power(se, 2.0)
            assert sens.loc[a, f"mde_{axis}"] == pytest.approx(mde)
            assert mde == pytest.approx(2.0 + (1.959964 + 0.841621) * se)
            assert sens.loc[a, f"resistant_reachable_{axis}"] == reachable == (1.644854 * se < 2)
    mde, reachable = sensitivity.power(np.array([0.5, 1.2, 1.3]), 2.0)  # a planner's SEs
    assert mde == pytest.approx([3.4008, 5.3618, 5.6419], abs=1e-3)
    assert list(reachable) == [True, True, False]  # 1.645 x 1.3 = 2.14 >= delta


def test_the_demo_design_cannot_call_size_resistant_nor_code_harmed_and_says_why():
    sens, _, truth = decided("a", 1, 0.4)  # the demo's shape: 2 bases x 2.2, 100 items, 1 seed
    assert not sens["resistant_reachable_size"].any()
    undecided = sens["size_class"].isin(["undetermined", "not decidable with this design"])
    assert (sens.loc[undecided, "size_class"] == "not decidable with this design").all()
    assert (truth.loc[undecided[undecided].index, "size_class"] == "resistant").any()
    assert not (sens[["data_class", "size_class"]] == "resistant").any(axis=None)  # no false call
    (note,) = [n for n in out_of_reach(sens.reset_index(), 2.0) if "to size" in n]
    assert all(a in note for a in sens.index)
    code = sens.loc["code"]  # harmful, planted -4.6: its point below -delta, its CI not
    assert truth.loc["code", "data_class"] == "harmed" and code["data_sensitivity"] < -2
    assert code["data_class"] != "harmed" and code["data_sensitivity_hi"] > -2
    assert f"data_sensitivity {code['data_sensitivity']:+.2f} < -2 but its 95% CI" in code["note"]
    assert code["note"].endswith(f"reaches {code['data_sensitivity_hi']:+.2f}: not harmed")


def test_a_log_linear_line_saturates_where_it_reaches_100_inside_the_grid():
    """A log-linear line has no asymptote; clipped at 100 it can rise no further, so where it
    reaches 100 inside the grid it saturates (the rise from its floor to 100), and where it is
    still below 100 at the largest n it does not saturate in the grid."""
    from doit.analysis.fits import Floor, fit_series

    x, m = np.array([4.0, 16, 64, 256]), np.full(4, 200.0)
    floor = Floor(60.0, 200.0, "untuned")  # untuned at 30
    reaching = fit_series(x, [90.0, 150, 200, 200], m, 0.25, floor=floor)
    rising = fit_series(x, [80.0, 100, 120, 140], m, 0.25, floor=floor)
    for fit in (reaching, rising):
        fit.chosen = "loglinear"  # the form under test, whatever the criterion chose
    assert reaching.saturation_top()[0] == 100.0
    assert 16 < sensitivity.saturation_n([reaching]) <= 64
    assert np.isnan(rising.saturation_top()[0])
    assert np.isnan(sensitivity.saturation_n([rising]))
