"""Pretraining-only grids (the base ladder): their checks, cells, runs and pretraining table."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from doit.grid import read_pretraining
from doit.grid.plan import expand, write_plan
from doit.grid.pretraining import COLUMNS, PretrainingError, shard_path
from doit.grid.runner import run_study
from doit.grid.spec import GridError, load_grid, parse_sets
from doit.grid.table import print_table
from doit.io import read_json
from tests.grid.conftest import write_grid
from tests.tiny import TINY_PRETRAIN


def ladder(tmp_path, text=None, tokenizer=None, **keys) -> dict:
    """Two xs bases (vanilla, svformer), each pretrained per pretrain_seed under bases_dir."""
    files = {"train_file": str(text), "valid_file": str(text), "tokenizer_path": str(tokenizer)}
    overrides = {**TINY_PRETRAIN, **files} if text else {}
    bases = [
        {
            "name": f"{arch}_xs",
            "arch": arch,
            "path": f"{arch}_xs/seed{{seed}}",
            "pretrain": {
                "config": "recipes/configs/pretrain/xs.yaml",
                "overrides": {"value_mode": arch, **overrides},
            },
        }
        for arch in ("vanilla", "svformer")
    ]
    return {
        "name": "ladder",
        "doit_dir": str(tmp_path),
        "bases_dir": str(tmp_path / "bases"),
        "pretrain_seed": [3],
        "bases": bases,
        **keys,
    }


def test_the_shipped_ladder_plans_one_pretraining_cell_per_base_and_seed(tmp_path):
    grid = load_grid(
        "recipes/grids/ladder.yaml", parse_sets(["pretrain_seed=[0, 1]", f"bases_dir={tmp_path}"])
    )
    cells = expand(grid)
    assert grid.pretraining_only and len(cells) == 2 * 9 and {c.kind for c in cells} == {"pretrain"}
    assert [c.seed for c in cells] == [0] * 9 + [1] * 9  # seed by seed, as the old ladder ran
    first = cells[0]
    assert first.id.startswith("pretrain-vanilla_l-s0-") and first.overrides["seed"] == 0
    assert first.path == str(tmp_path / "vanilla_l" / "seed0")
    elsewhere = expand(load_grid("recipes/grids/ladder.yaml", {"pretrain_seed": [0, 1]}))
    assert [c.id for c in elsewhere] == [c.id for c in cells]  # bases_dir is not in the ids


@pytest.mark.parametrize(
    "keys, where",
    [
        (
            {"bases": [{"name": "b", "arch": "vanilla", "path": "b/seed{seed}"}]},
            "bases[0].pretrain",
        ),
        (
            {
                "pretrain_seed": None,
                "bases": [{"name": "b", "arch": "vanilla", "path": "b", "params": 1}],
            },
            "bases[0].pretrain",
        ),
        (
            {
                "bases": [
                    {
                        "name": "b",
                        "arch": "vanilla",
                        "path": "b",
                        "pretrain": {"config": "recipes/configs/pretrain/xs.yaml"},
                    }
                ]
            },
            "bases[0].path",
        ),
        ({"seed": [0, 1]}, "seed"),
        ({"max_new_tokens": {"mc": 4}}, "data"),
    ],
)
def test_bad_pretraining_grids_name_the_key(tmp_path, keys, where):
    path = write_grid(tmp_path / "bad.yaml", ladder(tmp_path, **keys))
    with pytest.raises(GridError) as e:
        load_grid(path)
    assert str(e.value).startswith(f"{path}: {where}")
    with pytest.raises(GridError, match="expected KEY=VALUE"):
        parse_sets(["pretrain_seed"])


def test_a_ladder_run_tables_each_base_once_and_a_rerun_trains_nothing(tmp_path, micro_dir, capsys):
    text = tmp_path / "text.txt"
    lines = (micro_dir / "pretrain" / "train.txt").read_text(encoding="utf-8").splitlines()
    text.write_text("\n".join(lines[:200]) + "\n", encoding="utf-8")
    grid = ladder(tmp_path, text, micro_dir / "tokenizer")
    grid = load_grid(write_grid(tmp_path / "g.yaml", grid))
    study = tmp_path / "study"
    cells, _ = write_plan(grid, study)
    assert run_study(study) == {c.id: "done" for c in cells}
    df = read_pretraining(study)
    assert list(df.columns) == list(COLUMNS) and len(df) == 2
    assert df.equals(read_pretraining(study / "pretraining.csv"))  # run wrote the table
    for (_, row), cell in zip(df.iterrows(), sorted(cells, key=lambda c: c.id)):
        base = tmp_path / "bases" / row["base"] / "seed3"
        end = read_json(base / "DONE")
        assert [row[k] for k in ("cell", "arch", "size", "seed")] == [cell.id, end["arch"], "xs", 3]
        assert row["valid_loss"] == end["valid_loss"] and row["tokens"] == 2 * 4 * 32
        assert row["unigram_loss"] == min(end["unigram_entropy"], end["unigram_valid_loss"])
        assert read_json(base / "doit_base.json") == cell.identity
    svformer, vanilla = df["params_non_embedding"]  # svformer's layers 2..L own no v_proj
    assert svformer < vanilla
    metrics = (tmp_path / "bases" / "vanilla_xs" / "seed3" / "metrics.jsonl").read_text()
    assert run_study(study) == {}  # finished: nothing to run
    shard_path(study, cells[0].id).unlink()  # a base built before its row was written (old ladder)
    assert run_study(study) == {cells[0].id: "done"}
    assert (tmp_path / "bases" / "vanilla_xs" / "seed3" / "metrics.jsonl").read_text() == metrics
    pd.testing.assert_frame_equal(read_pretraining(study), df)
    assert print_table(study) == 0  # `doit grid table`: a pretraining-only study's table
    out = capsys.readouterr().out
    assert "final validation loss" in out and "vanilla_xs" in out and "svformer_xs" in out


def test_the_pretraining_table_is_validated_where_read(tmp_path):
    row = {
        "cell": "c",
        "base": "b",
        "arch": "vanilla",
        "size": "xs",
        "seed": 0,
        "params_non_embedding": 10,
        "params_total": 20,
        "valid_loss": 1.5,
        "tokens": 64,
        "wall_s": 2.0,
        "unigram_loss": math.nan,
    }
    path = tmp_path / "t.csv"
    pd.DataFrame([row, row]).to_csv(path, index=False)
    with pytest.raises(PretrainingError, match="cell c has several rows"):
        read_pretraining(path)
    pd.DataFrame([row]).drop(columns=["valid_loss"]).to_csv(path, index=False)
    with pytest.raises(PretrainingError, match=f"{path}: missing column.*valid_loss"):
        read_pretraining(path)
