"""The random_mixes data axis: Dirichlet mixtures around the pool prior at a fixed total, written
as mix files at plan time, each a mix cell."""

from __future__ import annotations

import numpy as np
import pytest

from doit.data.cells import pool_sizes
from doit.data.load import load_items
from doit.data.mixes import load_mix, resolve_counts
from doit.grid.plan import PlanError, expand, read_plan, write_plan
from doit.grid.random_mixes import counts, draw
from doit.grid.spec import GridError, load_grid
from tests.grid.conftest import grid_dict, write_grid
from tests.tiny import FIXTURE

POOLS = {
    "biology": 1042,
    "history": 1893,
    "code": 4968,
    "creative_writing": 1000,
    "chinese": 1450,
    "understanding": 4885,
    "role_play": 1000,
    "reasoning": 12751,
    "math": 11501,
    "ethics": 1000,
}


def test_mixtures_spend_the_total_within_the_pools_and_repeat_with_their_seed():
    mixes = draw(POOLS, 50, 10_000, 1.0, seed=3)
    for mix in mixes:
        assert sum(mix.values()) == 10_000
        assert all(0 <= n <= POOLS[k] for k, n in mix.items())
    assert mixes == draw(POOLS, 50, 10_000, 1.0, seed=3)
    assert mixes != draw(POOLS, 50, 10_000, 1.0, seed=4)
    prior = np.array(list(POOLS.values())) / sum(POOLS.values())

    def spread(concentration):
        shares = np.array([list(m.values()) for m in draw(POOLS, 200, 5000, concentration, 0)])
        return np.abs(shares / 5000 - prior).mean()

    assert spread(30.0) < spread(1.0) / 2  # a larger concentration stays nearer the prior
    with pytest.raises(ValueError, match="exceeds the pools"):
        draw(POOLS, 1, sum(POOLS.values()) + 1, 1.0, 0)


def test_counts_cap_at_pools_and_spread_the_overflow():
    got = counts(np.array([0.9, 0.05, 0.05]), 100, np.array([10.0, 80.0, 80.0]))
    assert got[0] == 10 and sum(got) == 100 and got[1] == got[2] == 45


@pytest.mark.parametrize(
    "axis,where",
    [
        ({"total": 8}, "data.random_mixes.count"),
        ({"count": 2, "total": 8, "concentration": 0}, "data.random_mixes.concentration"),
        ({"count": 2, "total": 8, "bases": ["nope"]}, "data.random_mixes.bases"),
        ({"count": 2, "total": 8, "spread": 1}, "data.random_mixes.spread"),
        ({"count": 2, "total": 8, "source": "all"}, "data.random_mixes.source"),
    ],
)
def test_a_bad_axis_names_its_key(tmp_path, tiny_base, axis, where):
    path = write_grid(tmp_path / "g.yaml", grid_dict(tiny_base, data={"random_mixes": axis}))
    with pytest.raises(GridError, match=where.replace(".", r"\.")):
        load_grid(path)


def test_planning_writes_each_mixture_as_a_mix_cell(tmp_path, tiny_base):
    raw = grid_dict(
        tiny_base, data={"per_ability": [1], "random_mixes": {"count": 3, "total": 8, "seed": 1}}
    )
    grid = load_grid(write_grid(tmp_path / "g.yaml", raw))
    with pytest.raises(PlanError, match="data.random_mixes"):
        expand(grid)  # its files go into a study folder
    study = tmp_path / "study"
    cells, _ = write_plan(grid, study)
    mixes = [c for c in cells if c.construction == "mix"]
    assert [c.mix for c in mixes] == [f"random-s1-{i:03d}" for i in range(3)]
    pools = pool_sizes(load_items(FIXTURE, "1000"))
    drawn = draw(pools, 3, 8, 1.0, 1)
    for cell, mix in zip(mixes, drawn):
        spec = load_mix(cell.recipe["mix"])
        assert resolve_counts(spec, pools) == {k: n for k, n in mix.items() if n}
        assert spec.provenance["random_mixes"]["count"] == 3
    again, _ = write_plan(load_grid(write_grid(tmp_path / "g.yaml", raw)), study)
    assert [c.id for c in again] == [c.id for c in read_plan(study).cells] == [c.id for c in cells]
    too_many = grid_dict(tiny_base, data={"random_mixes": {"count": 1, "total": 10_000}})
    with pytest.raises(PlanError, match="exceeds the pools"):
        write_plan(load_grid(write_grid(tmp_path / "h.yaml", too_many)), tmp_path / "other")
    refused = {**raw, "sft": {**raw["sft"], "overrides": {"learnin_rate": 1e-3}}}
    with pytest.raises(GridError, match="learnin_rate"):
        write_plan(load_grid(write_grid(tmp_path / "r.yaml", refused)), tmp_path / "refused")
    assert not (tmp_path / "refused").exists()  # not even the mix files: checked first
