"""The oracle test: on planted studies (planted curves, binomial item noise), ``marginal`` gets
>= 90% of the exact optimum's planted gain over uniform, and with a planted transfer term it
beats the transfer-blind allocation."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import pytest

from doit.analysis.curriculum import Options
from doit.analysis.curriculum.evidence import gather
from doit.analysis.curriculum.model import transfer_shares
from doit.analysis.curriculum.options import SETTINGS
from doit.analysis.curriculum.policies import marginal
from doit.analysis.synthetic import BASES, Curve, oracle_allocation, planted_macro, planted_study

pytestmark = pytest.mark.slow

P = BASES["s"]
BUDGET = 1536  # 256 items per ability, uniform
NS = (4, 16, 64, 256, 1024)


def six(transfer=(0.0,) * 6) -> dict[str, Curve]:
    """Three responsive abilities, one that saturates by n ~ 64 (convex at small n: the exact
    solver's case), two flat ones."""
    t = dict(
        zip(
            ("biology", "code", "creative_writing", "understanding", "role_play", "ethics"),
            transfer,
        )
    )
    return {
        "biology": Curve(a=-3.0, b_data=0.9, b_size=0, transference=t["biology"]),
        "code": Curve(a=-3.0, b_data=1.0, b_size=0, chance=1 / 3, transference=t["code"]),
        "creative_writing": Curve(
            a=-3.0, b_data=2.5, b_size=0, chance=1 / 3, transference=t["creative_writing"]
        ),
        "understanding": Curve(a=-3.5, b_data=0.9, b_size=0, transference=t["understanding"]),
        "role_play": Curve(a=0.0, b_data=0.0, b_size=0, chance=1 / 3, transference=t["role_play"]),
        "ethics": Curve(a=-1.0, b_data=0.0, b_size=0, transference=t["ethics"]),
    }


def evidence(curves, rng, tmp_path, loo=()):
    table, _, _ = planted_study(
        curves,
        bases={"s": P},
        ns=NS,
        n_items=300,
        loo_ns=loo,
        epochs=(5.0,),
        per_item=False,
        rng=rng,
    )
    path = tmp_path / f"study{rng}.csv"
    table.to_csv(path, index=False)
    options = Options(
        budget=BUDGET,
        pools=dict.fromkeys(curves, 1000),
        settings=replace(SETTINGS, replicates=10, seed=rng),
    )
    return gather(path, options)


def test_marginal_reaches_90_percent_of_the_oracle_gain_over_20_studies(tmp_path):
    curves = six()
    uniform = dict.fromkeys(curves, BUDGET // len(curves))
    oracle = oracle_allocation(curves, BUDGET, params=P, params_min=P)
    base = planted_macro(curves, uniform, P, P)
    oracle_gain = planted_macro(curves, oracle, P, P) - base
    assert oracle_gain >= 2.0
    gains = [
        planted_macro(curves, marginal(evidence(curves, s, tmp_path)).counts, P, P) - base
        for s in range(20)
    ]
    assert np.mean(gains) >= 0.9 * oracle_gain, (np.mean(gains), oracle_gain)


def test_with_planted_transfer_it_beats_the_transfer_blind_allocation(tmp_path):
    curves = six(transfer=(0.0, 0.8, 0.0, 0.0, 0.0, 0.0))  # code learns mostly from the others
    uniform = dict.fromkeys(curves, BUDGET // len(curves))
    base = planted_macro(curves, uniform, P, P)
    aware, blind = [], []
    for s in range(4):
        ev = evidence(curves, s, tmp_path, loo=(256,))
        assert ev.model.uses_transfer
        off = dataclasses.replace(ev.model, transfer=transfer_shares(None, ev.abilities, False))
        aware.append(planted_macro(curves, marginal(ev).counts, P, P) - base)
        blind.append(
            planted_macro(curves, marginal(dataclasses.replace(ev, model=off)).counts, P, P) - base
        )
    assert np.mean(aware) > np.mean(blind) + 0.3, (aware, blind)
    assert sum(a > b for a, b in zip(aware, blind)) >= 3
