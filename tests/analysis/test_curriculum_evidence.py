"""Issue #32's curriculum rules: evidence-bounded reach, transfer anchored on the untuned base
and measured on the target (``--transfer-from``), the risk-aware objective and ``--no-loss``,
and the cross-fitted predicted gain."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from doit.analysis import features
from doit.analysis.curriculum import CurriculumError, Options, make
from doit.analysis.curriculum import crossfit as cf
from doit.analysis.curriculum.evidence import gather
from doit.analysis.curriculum.options import EXTRAPOLATE_BELOW, FURTHER, REACH, SETTINGS
from doit.analysis.curriculum.policies import marginal, objective, uniform
from doit.analysis.pipeline import Analysis
from doit.analysis.synthetic import BASES, Curve, planted_study

CURVES = {
    "biology": Curve(a=-3.0, b_data=0.9, b_size=0.0, transference=0.3),
    "code": Curve(a=-2.0, b_data=0.5, b_size=0.0, chance=1 / 3, transference=0.0),
    "ethics": Curve(a=-2.5, b_data=0.7, b_size=0.0, transference=0.5),
}
POOLS = dict.fromkeys(CURVES, 5000)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Two bases, n = 4 ... 256, 300 items a cell with per-item rows, leave-one-out cells at
    n = 64 on both; the untuned code cell of s raised 20 points."""
    table, items, _ = planted_study(
        CURVES,
        bases={"xs": BASES["s"], "s": BASES["m"]},
        ns=(4, 16, 64, 256),
        n_items=300,
        loo_ns=(64,),
        epochs=(5.0,),
        rng=3,
    )
    folder = tmp_path_factory.mktemp("study32")
    # valid as a copy of test, per item (planted_study scores valid without per-item rows)
    test = table[table["split"] == "test"]
    table = pd.concat([test, test.assign(split="valid")], ignore_index=True)
    items = pd.concat([items, items.assign(split="valid")], ignore_index=True)
    mine = items["cell"].eq("s-base") & items["ability"].eq("code")
    wrong = items.index[mine & ~items["correct"].astype(bool)]
    items.loc[wrong[wrong % 2 == 0][:60], "correct"] = True  # + 60 of 300 in each split
    raised = (table["cell"] == "s-base") & (table["ability"] == "code")
    k = items[mine].groupby("split")["correct"].mean()
    table.loc[raised, "score"] = table.loc[raised, "split"].map(100 * k).astype(float)
    from doit.grid.results import write_shard

    for cell, rows in table.groupby("cell"):
        write_shard(folder, cell, items[items["cell"] == cell], per_item=True)
        write_shard(folder, cell, rows)
    return Analysis(str(folder), SETTINGS_40)


SETTINGS_40 = replace(SETTINGS, replicates=40)


def options(budget=300, **kw) -> Options:
    return Options(budget=budget, base="s", pools=POOLS, settings=SETTINGS_40, **kw)


def _only(pts, mask) -> float:
    (score,) = pts.loc[mask.fillna(False), "score"].astype(float)
    return float(score)


def test_transfer_is_anchored_on_the_untuned_base_not_chance(study):
    counts = study.counts
    pts = counts.points
    chance = features.loo_sums(counts, "code", bases=["s"])
    anchored = features.loo_sums(counts, "code", bases=["s"], anchored=True)
    code = (pts["ability"] == "code") & (pts["base"] == "s")
    base = _only(pts, code & (pts["construction"] == "base"))
    full = _only(pts, code & (pts["n_per_ability"] == 64) & pts["excluded_ability"].isna())
    loo = _only(pts, code & (pts["excluded_ability"] == "code"))
    assert anchored.pairs == chance.pairs == 1
    assert anchored.kept.point / anchored.gain.point == pytest.approx((loo - base) / (full - base))
    c = pts.loc[pts["ability"] == "code", "chance"].iloc[0]
    assert chance.kept.point / chance.gain.point == pytest.approx((loo - c) / (full - c))
    # the head start above chance no longer counts as gain kept without own data
    assert anchored.kept.point / anchored.gain.point < chance.kept.point / chance.gain.point - 0.1
    # the model reproduces the leave-one-out cell it is fitted on: f + T (U(n) - f)
    ev = gather(study, options())
    m = ev.model
    t, f = m.transfer["code"].share, m.start("code")
    at_loo = float(m.values("code", np.array([0.0]), 128.0)[0])
    u = float(m.values("code", np.array([64.0]), 192.0)[0])  # a uniform cell: U(64)
    assert at_loo == pytest.approx(f + t * (u - f), abs=1e-9)


def test_transfer_from_another_base_is_refused_unless_named(study, tmp_path):
    table = study.table
    only_xs = table[~(table["excluded_ability"].notna() & (table["base"] == "s"))]
    path = tmp_path / "xs_loo.csv"
    only_xs.to_csv(path, index=False)
    a = Analysis(str(path), SETTINGS_40)
    with pytest.raises(CurriculumError, match="--transfer-from"):
        gather(a, options(transfer="on"))
    auto = gather(a, options())
    assert not auto.model.uses_transfer
    assert any("not on the target s" in n for n in auto.notes)
    named = gather(a, options(transfer_from="xs"))
    assert named.model.uses_transfer
    assert any("measured on xs, applied to s (--transfer-from)" in n for n in named.notes)
    with pytest.raises(CurriculumError, match="no leave-one-out cells"):
        gather(a, options(transfer_from="nope"))


def test_evidence_bounded_reach_and_the_grid_point_that_would_spend_a_budget(study):
    ev = gather(study, options())
    for k in ev.abilities:  # 1 x the largest n, 4 x where the held-out error is small
        small = ev.heldout[k] < EXTRAPOLATE_BELOW
        assert ev.reach[k] == (FURTHER if small else REACH), (k, ev.heldout[k])
    assert any(n.startswith("evidence-bounded") for n in ev.notes)
    counts = marginal(ev).counts
    assert all(counts[k] <= ev.reach[k] * 256 for k in counts)
    # a budget beyond 3 x 256 under reach 1: the note names the n that would hold it
    big = gather(study, options(budget=1200, reach=1.0))
    alloc = marginal(big)
    (note,) = [n for n in alloc.notes if "cannot be spent inside the evidence" in n]
    assert "add n = 400 on s" in note  # 3 x 400 = 1,200
    assert sum(alloc.counts.values()) == 1200


def test_the_risk_term_trades_mean_for_spread_exactly(study):
    plug = gather(study, options(risk=0.0, reach=4.0))
    risky = dataclasses.replace(plug, options=replace(plug.options, risk=2.0))
    a, b = marginal(plug).counts, marginal(risky).counts
    assert a != b
    total = sum(a.values())

    def score(ev, counts):
        return sum(
            float(objective(ev, k, np.array([counts[k]], float), total, uniform(ev).counts)[0])
            for k in ev.abilities
        )

    # each allocation is the exact optimum of its own objective
    assert score(plug, a) >= score(plug, b) - 1e-9
    assert score(risky, b) >= score(risky, a) - 1e-9

    def spread(c):
        return sum(plug.model.spread(k, np.array([c[k]], float), total)[0] for k in c)

    assert spread(b) < spread(a)


def test_no_loss_keeps_every_ability_near_its_uniform_score(study):
    free = make(study, options(budget=600, reach=4.0, risk=0.0, crossfit=False))
    safe = make(study, options(budget=600, reach=4.0, risk=0.0, no_loss=True, crossfit=False))

    def worst(r):
        rows = r.table[(r.table["policy"] == "marginal") & (r.table["ability"] != "macro")]
        return rows["gain"].min()

    assert worst(safe) >= worst(free)
    assert any("--no-loss" in n for n in safe.notes)


def _ids(items) -> set:
    return set(map(tuple, items[["ability", "type", "idx"]].to_numpy()))


def test_halves_split_each_ability_s_items_in_two_and_the_gain_is_cross_fitted(study):
    h0, h1 = cf.halves(study)
    valid = study.items[study.items["split"] == "valid"]
    for part in (h0, h1):
        mine = part.items[part.items["split"] == "valid"]
        per = mine.drop_duplicates(["ability", "type", "idx"]).groupby("ability").size()
        assert (per == 150).all()  # half of 300 per ability
        row = part.table[(part.table["split"] == "valid") & (part.table["cell"] == "s-n64-s0")]
        got = mine[mine["cell"] == "s-n64-s0"].groupby("ability")["correct"].mean() * 100
        assert np.allclose(row.set_index("ability")["score"].astype(float), got)
    ids = [_ids(p.items[p.items["split"] == "valid"]) for p in (h0, h1)]
    assert not ids[0] & ids[1] and ids[0] | ids[1] == _ids(valid)  # disjoint, every item
    assert cf.halves(study)[0] is h0  # made once per analysis
    crossed = make(study, options())
    plug = make(study, options(crossfit=False))

    def macro(r):
        return r.table.set_index(["policy", "ability"]).loc[("marginal", "macro")]

    assert macro(crossed)["predicted_from"].startswith(cf.CROSSFIT)
    assert macro(plug)["predicted_from"].startswith(cf.PLUG_IN)
    assert macro(crossed)["gain"] != macro(plug)["gain"]
    assert crossed.allocations["marginal"].counts == plug.allocations["marginal"].counts

    def rows(r):  # the ability rows predict the written counts, cross-fitted or not
        t = r.table[(r.table["policy"] == "marginal") & (r.table["ability"] != "macro")]
        return t[["n", "predicted", "gain"]].to_numpy(float)

    assert np.allclose(rows(crossed), rows(plug))


def test_the_cli_flags_reach_the_options():
    from doit.analysis.cli import build_parser
    from doit.analysis.curriculum.options import RISK

    argv = ["curriculum", "study", "--budget", "10", "--out", "o"]
    plain = build_parser().parse_args(argv)
    assert plain.reach is None and plain.risk == RISK and not plain.no_loss
    assert plain.transfer_from is None and not plain.plug_in
    more = ["--reach", "4", "--risk", "0", "--no-loss", "--transfer-from", "xs", "--plug-in"]
    asked = build_parser().parse_args(argv + more)
    assert (asked.reach, asked.risk, asked.no_loss, asked.transfer_from, asked.plug_in) == (
        4.0,
        0.0,
        True,
        "xs",
        True,
    )
