"""The replay data axis: each staged mix of data.mix planned at several replay counts, one cell
apiece, its copies written into the study at plan time."""

from __future__ import annotations

import pytest
import yaml

from doit.data.mixes import load_mix
from doit.grid.plan import PlanError, expand, read_plan, write_plan
from doit.grid.spec import GridError, load_grid
from tests.grid.conftest import grid_dict, write_grid


def staged_mix(folder, replay: int | None = 1):
    second = {"counts": {"biology": 2}} | ({"replay": replay} if replay else {})
    stages = [{"counts": {"math": 2}}, second]
    path = folder / "dmt.yaml"
    path.write_text(yaml.safe_dump({"seed": 0, "stages": stages}))
    return str(path)


def test_each_staged_mix_is_a_cell_at_each_replay_count(tmp_path, tiny_base):
    mix = staged_mix(tmp_path)
    raw = grid_dict(tiny_base, data={"mix": [mix], "replay": [0, 2]})
    grid = load_grid(write_grid(tmp_path / "g.yaml", raw))
    with pytest.raises(PlanError, match="data.replay"):
        expand(grid)  # its files go into a study folder
    cells, _ = write_plan(grid, tmp_path / "study")
    mixes = [c for c in cells if c.construction == "mix"]
    assert sorted({c.mix for c in mixes}) == ["dmt-replay0", "dmt-replay2"]
    for cell in mixes:
        spec = load_mix(cell.recipe["mix"])
        assert [s.replay for s in spec.stages] == [0, int(cell.mix[-1])]
    assert len({c.id for c in mixes}) == len(mixes)  # the counts are in the ids
    again, _ = write_plan(load_grid(write_grid(tmp_path / "g.yaml", raw)), tmp_path / "study")
    assert [c.id for c in again] == [c.id for c in read_plan(tmp_path / "study").cells]
    plain = write_plan(
        load_grid(write_grid(tmp_path / "p.yaml", grid_dict(tiny_base, data={"mix": [mix]}))),
        tmp_path / "plain",
    )[0]
    at_one = {c.id for c in mixes if c.mix == "dmt-replay1"}
    assert not at_one and {c.mix for c in plain if c.construction == "mix"} == {"dmt"}


@pytest.mark.parametrize(
    "data, where",
    [
        ({"replay": [4]}, "data.replay: replays the staged mixes of data.mix"),
        ({"mix": ["FLAT"], "replay": [4]}, r"data\.mix\[0\]: .* has no stages"),
        ({"mix": ["STAGED"], "replay": [-1]}, "data.replay: expected integers >= 0"),
        ({"mix": ["STAGED"], "replay": {"values": [4]}}, "data.replay: expected a list"),
    ],
)
def test_a_replay_axis_without_a_staged_mix_is_refused(tmp_path, tiny_base, data, where):
    flat = tmp_path / "flat.yaml"
    flat.write_text(yaml.safe_dump({"seed": 0, "counts": {"math": 2}}))
    files = {"FLAT": str(flat), "STAGED": staged_mix(tmp_path)}
    data = {k: [files.get(v, v) for v in x] if k == "mix" else x for k, x in data.items()}
    path = write_grid(tmp_path / "g.yaml", grid_dict(tiny_base, data=data))
    with pytest.raises(GridError, match=where):
        load_grid(path)
