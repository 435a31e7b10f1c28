"""A staged mix as a grid cell (in this process): the cell's rows are its last stage's, each
earlier stage's final model is scored for forgetting (read with ``stages=True``), and retention
prunes every stage's checkpoints but keeps the earlier stages' final models."""

from __future__ import annotations

import pytest
import yaml

from doit.grid import read_results
from doit.grid.plan import write_plan
from doit.grid.results import read_items
from doit.grid.runner import run_study
from doit.grid.spec import load_grid
from doit.train import rundir
from tests.grid.conftest import grid_dict, write_grid

pytestmark = pytest.mark.slow  # one staged cell trained and scored three times (~20 s)


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_base):
    tmp = tmp_path_factory.mktemp("staged_grid")
    mix = tmp / "dmt.yaml"
    stages = [{"counts": {"math": 2}}, {"counts": {"biology": 2}, "replay": 1}]
    mix.write_text(yaml.safe_dump({"seed": 0, "stages": stages}))
    grid = grid_dict(tiny_base, data={"mix": [str(mix)]}, eval_epochs="last", keep="last")
    study = tmp / "study"
    write_plan(load_grid(write_grid(tmp / "grid.yaml", grid)), study)
    assert set(run_study(study).values()) == {"done"}
    return study


def test_a_staged_cell_reads_as_its_last_stage(study):
    df = read_results(study)
    staged = df[df["construction"] == "mix"]
    assert len(staged) and set(staged["stage"]) == {2}
    assert (df.loc[df["construction"] == "base", "stage"].isna()).all()
    assert staged["n_total"].eq(3 + 2).all()  # math 2, then biology 2 and 1 replayed
    items = read_items(study)
    assert set(items.loc[items["cell"].isin(staged["cell"]), "stage"]) == {2}


def test_each_earlier_stage_is_scored_for_forgetting(study):
    every = read_results(study, stages=True)
    staged = every[every["construction"] == "mix"]
    assert set(staged["stage"]) == {1, 2}
    first, last = (staged[staged["stage"] == k].set_index(["split", "ability"]) for k in (1, 2))
    assert first.index.equals(last.index)  # the same splits and abilities, both stages
    cell = staged["cell"].iloc[0]
    assert any(p.name.startswith("stage1-e") for p in (study / "cells" / cell / "eval").iterdir())
    items = read_items(study, stages=True)
    assert set(items.loc[items["cell"] == cell, "stage"]) == {1, 2}
    own = staged.set_index(["stage", "split", "ability"])["n_own"]  # what each stage had seen
    assert own[(1, "test", "math")] == 2 and own[(1, "test", "biology")] == 0
    assert own[(2, "test", "biology")] == 2 and own[(2, "test", "math")] >= 2


def test_retention_prunes_each_stages_checkpoints_and_keeps_their_models(study):
    cell = read_results(study).query("construction == 'mix'")["cell"].iloc[0]
    run = study / "cells" / cell / "run"
    for k in (1, 2):
        stage = rundir.stage_dir(run, k)
        assert rundir.checkpoints(stage) == [] and (stage / "config.json").is_file()
