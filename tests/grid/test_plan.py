"""Planning: grid expansion, stable cell ids, the missing-base message, replanning."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from doit.grid.plan import PlanError, base_identity, expand, read_plan, write_plan
from doit.grid.spec import GridError, load_grid
from tests.grid.conftest import grid_dict, write_grid
from tests.tiny import REPO


def plan(tmp_path, base, name="grid.yaml", **keys):
    return expand(load_grid(write_grid(tmp_path / name, grid_dict(base, **keys))))


def ids(cells) -> dict[str, str]:
    """label (id without its hash) -> id."""
    return {c.id.rsplit("-", 1)[0]: c.id for c in cells}


def test_expansion_covers_bases_data_and_seeds(tmp_path, tiny_base):
    cells = plan(
        tmp_path, tiny_base, seed=[0, 1], data={"per_ability": [1, 4], "loo": {"values": [4]}}
    )
    labels = sorted(ids(cells))
    assert len(cells) == 2 * (1 + 2 + 10)  # seeds x (n = 0, two n, ten leave-one-out cells)
    assert "tiny-n0000-s1" in labels and "tiny-n0004-no_ethics-s0" in labels
    loo = next(c for c in cells if c.id.startswith("tiny-n0004-no_math-s0"))
    assert loo.excluded_ability == "math" and loo.n_total == 36
    assert loo.recipe["exclude_abilities"] == ["math"]
    assert loo.est_steps == 10  # two epochs of ceil(36 / 8) steps (the micro recipe's batch)
    base = next(c for c in cells if c.kind == "base")
    assert base.construction == "base" and base.n_per_ability == 0


def test_ids_are_stable_and_ignore_execution_details(tmp_path, tiny_base):
    first = ids(plan(tmp_path, tiny_base))
    assert ids(plan(tmp_path, tiny_base)) == first
    moved = tmp_path / "elsewhere"
    shutil.copytree(tiny_base, moved)
    bases = [{"name": "tiny", "arch": "llama", "params": 1000, "path": str(moved)}]
    same = plan(
        tmp_path,
        tiny_base,
        launcher="python",
        bases=bases,
        sft={
            **grid_dict(tiny_base)["sft"],
            "overrides": {
                **grid_dict(tiny_base)["sft"]["overrides"],
                "logging_steps": 5,
                "dataloader_num_workers": 2,
            },
        },
    )
    assert ids(same) == first
    lr = grid_dict(tiny_base)["sft"]
    lr["overrides"] = {**lr["overrides"], "learning_rate": 3e-4}
    changed = ids(plan(tmp_path, tiny_base, sft=lr))
    assert changed["tiny-n0000-s0"] == first["tiny-n0000-s0"]  # the untuned base is not trained
    assert changed["tiny-n0001-s0"] != first["tiny-n0001-s0"]
    budgets = ids(
        plan(
            tmp_path,
            tiny_base,
            max_new_tokens={**grid_dict(tiny_base)["max_new_tokens"], "math": 64},
        )
    )
    assert budgets["tiny-n0000-s0"] != first["tiny-n0000-s0"]  # evaluation settings count


def test_a_missing_base_without_pretrain_names_the_path_and_the_way_to_build_it(tmp_path):
    missing = tmp_path / "no_such_base"
    with pytest.raises(PlanError) as e:
        plan(tmp_path, missing)
    assert str(missing) in str(e.value) and "pretrain" in str(e.value)
    assert "make ladder" in str(e.value)


def test_a_missing_base_with_pretrain_becomes_a_cell_the_others_wait_for(tmp_path):
    bases = [
        {
            "name": "xs",
            "arch": "vanilla",
            "path": str(tmp_path / "xs"),
            "pretrain": {"config": "recipes/configs/pretrain/xs.yaml", "overrides": {"seed": 1}},
        }
    ]
    cells = plan(tmp_path, tmp_path, bases=bases)
    assert cells[0].kind == "pretrain" and cells[0].overrides == {"seed": 1}
    assert all(c.needs == cells[0].id for c in cells[1:])


def test_running_some_cells_brings_the_pretraining_they_need(tmp_path):
    from doit.grid.plan import write_plan
    from doit.grid.runner import todo

    bases = [
        {
            "name": "xs",
            "arch": "vanilla",
            "path": str(tmp_path / "xs"),
            "pretrain": {"config": "recipes/configs/pretrain/xs.yaml"},
        }
    ]
    grid = load_grid(write_grid(tmp_path / "grid.yaml", grid_dict(tmp_path, bases=bases)))
    cells, _ = write_plan(grid, tmp_path / "study")
    pretraining, rest = todo(tmp_path / "study", "*-n0001-*")
    assert [c.id for c in pretraining] == [cells[0].id]
    assert {c.id for c in rest} == {c.id for c in cells if "-n0001-" in c.id}


@pytest.mark.parametrize(
    "keys, where",
    [
        ({"launcher": "slurm"}, "launcher"),
        ({"data": {"per_ability": [0]}}, "data.per_ability"),
        (
            {"data": {"per_ability": [1], "loo": {"values": [1], "abilities": ["maths"]}}},
            "data.loo.abilities",
        ),
        ({"max_new_tokens": {"mc": 4}}, "max_new_tokens"),
        ({"eval_epochs": "best"}, "eval_epochs"),
        ({"bases": [{"name": "b", "arch": "llama", "path": "x"}]}, "bases[0].params"),
        (
            {"bases": [{"name": "b", "arch": "llama", "path": "x", "chat_format": "chatml"}]},
            "bases[0].chat_format",
        ),
        ({"sft": {"config": "nope.yaml"}}, "sft.config"),
        ({"sedd": [0]}, "sedd"),
        ({"formulation": "cloze"}, "formulation"),
        ({"formulation": ["text", "text"]}, "formulation"),
        ({"eval_formulations": ["letters"]}, "eval_formulations"),
        ({"held_out_items": 0}, "held_out_items"),
        ({"seed": [0, 1], "base_seed": [2]}, "base_seed"),
        ({"base_seed": [0, 0]}, "base_seed"),
        ({"held_out_items": [100]}, "held_out_items"),
        ({"held_out_items": {"valid": 100}}, "held_out_items"),
        ({"held_out_items": {"valid": 0, "test": "all"}}, "held_out_items"),
        ({"held_out_items": {"valid": {"valid": 1, "test": 1}, "test": 1}}, "held_out_items"),
    ],
)
def test_bad_grids_name_the_file_and_the_key(tmp_path, tiny_base, keys, where):
    path = write_grid(tmp_path / "bad.yaml", grid_dict(tiny_base, **keys))
    with pytest.raises(GridError) as e:
        load_grid(path)
    assert str(e.value).startswith(f"{path}: {where}")


def test_a_study_refuses_another_grid_unless_replanned(tmp_path, tiny_base):
    study = tmp_path / "study"
    grid = load_grid(write_grid(tmp_path / "g.yaml", grid_dict(tiny_base)))
    cells, _ = write_plan(grid, study)
    shard = study / "results" / f"{cells[-1].id}.parquet"
    shard.parent.mkdir()
    shard.write_bytes(b"stands for a finished cell")
    other = grid_dict(tiny_base, data={"per_ability": [1]}, seed=[0])
    changed = load_grid(write_grid(tmp_path / "g.yaml", other))
    with pytest.raises(PlanError, match="differs in: data.loo"):
        write_plan(changed, study)
    kept, retired = write_plan(changed, study, replan=True)
    assert retired == [cells[-1].id] and not shard.exists()
    assert (study / "retired" / "results" / shard.name).is_file()
    assert {c.id for c in kept} == {c.id for c in cells[:-1]}
    assert json.loads((study / "plan.json").read_text())["grid"]["data"] == {"per_ability": [1]}


FIXTURES = Path(__file__).parent / "fixtures"
SHIPPED_GRIDS = sorted(
    p.relative_to(REPO).as_posix()
    for p in [
        *(REPO / "recipes" / "grids").glob("*.yaml"),
        REPO / "studies/micro_study/grid_practice.yaml",
    ]
)


# The micro grids' sft overrides when their letter ids were recorded, before they moved to the
# text formulation and its schedule: planned with them, they give those ids again.
AS_RECORDED = {
    "recipes/grids/demo.yaml": {"num_train_epochs": 5, "eval_strategy": "no"},
    "recipes/grids/micro.yaml": {"num_train_epochs": 5},
    "recipes/grids/value-residual.yaml": {"num_train_epochs": 5},
}

# The demo grew (n = 16 and 256, leave-one-out cells: curves that differ): its recorded cells
# are its old data axes' cells, which keep their ids.
DATA_AS_RECORDED = {"recipes/grids/demo.yaml": {"per_ability": [4, 64]}}


def shipped_cells(tmp_path, path, overrides=None):
    """The cells of a shipped grid, as planned in a checkout with no base built yet (paths are
    not in ids; a built base would have no pretraining cell)."""
    grid = load_grid(path, overrides)  # relative paths: the tests run from the repository root
    grid = replace(
        grid,
        bases=tuple(
            replace(b, path=str(tmp_path / "unbuilt" / b.name)) if b.pretrain else b
            for b in grid.bases
        ),
    )
    if Path(path).stem == "paper":  # its bases live on a cluster: plan says which path it expected
        with pytest.raises(PlanError, match="/models/chinese-llama-plus-7b holds no model"):
            expand(grid)
        stand_ins = [tmp_path / b.name for b in grid.bases]  # paths are not in ids
        for d in stand_ins:
            d.mkdir(exist_ok=True)
            (d / "config.json").write_text("{}")
        grid = replace(
            grid, bases=tuple(replace(b, path=str(d)) for b, d in zip(grid.bases, stand_ins))
        )
    return expand(grid)


@pytest.mark.parametrize("path", SHIPPED_GRIDS)
def test_every_shipped_grid_plans_the_cell_ids_it_always_had(tmp_path, path):
    """The ids recorded before the grid became typed (fixtures/shipped_cell_ids.json) are the
    ids planned today, in the letter formulation: finished cells and built bases stay valid.
    The micro grids moved to the text formulation: as recorded (letter, their old schedule)
    they plan their old ids; as shipped, every fine-tuned and untuned cell has a new id
    (``-text`` in its label), the pretraining cells keep theirs, and the new ids are recorded
    too (``text:`` keys)."""
    recorded = json.loads((FIXTURES / "shipped_cell_ids.json").read_text())
    cells = shipped_cells(tmp_path, path)
    assert all(c.id.startswith(c.base) or c.kind == "pretrain" for c in cells)
    if path not in recorded:  # shipped since: a pretraining-only grid (the ladder)
        assert load_grid(path).pretraining_only and {c.kind for c in cells} == {"pretrain"}
        return
    if path not in AS_RECORDED:
        assert load_grid(path).formulations == ("letter",)
        assert [c.id for c in cells] == recorded[path]
        return
    raw = load_grid(path).raw
    data = {"data": DATA_AS_RECORDED[path]} if path in DATA_AS_RECORDED else {}
    letter = shipped_cells(
        tmp_path,
        path,
        {"formulation": "letter", **data, "sft": {**raw["sft"], "overrides": AS_RECORDED[path]}},
    )
    assert [c.id for c in letter] == recorded[path]
    if path == "recipes/grids/micro.yaml":  # the letter study, kept to rerun: the same grid as then
        again = shipped_cells(tmp_path, "studies/micro_study/grid_letter.yaml")
        assert [c.id for c in again] == recorded[path]
    assert {c.formulation for c in cells if c.kind != "pretrain"} == {"text"}
    same_data = shipped_cells(tmp_path, path, data) if data else cells
    assert len(same_data) == len(letter)
    for new, old in zip(same_data, letter):
        assert (new.id == old.id) == (new.kind == "pretrain")
        assert new.kind == "pretrain" or "-text-s" in new.id
    assert [c.id for c in cells] == recorded[f"text:{path}"]


def test_a_plan_the_old_writer_wrote_reads_back_typed_and_replans_to_the_same_ids(tmp_path):
    """fixtures/old_study/plan.json was written by the code before cells were dataclasses (its
    grid names the pretraining config vanilla_xs.yaml, since folded into xs.yaml)."""
    old = read_plan(FIXTURES / "old_study")
    grid = old.grid  # the keys it gave and the defaults of those it left out
    assert (grid.name, grid.keep, grid.eval_batch_size) == ("old", "scored", 8)
    assert (grid.eval_epochs, grid.launcher, grid.gpus, grid.slurm) == ((1, 2), "inprocess", 1, {})
    assert [(b.name, b.shots, b.cells) for b in grid.benchmarks] == [("cmmlu", 5, "*mix_*")]
    kinds = [c.kind for c in old.cells]
    assert kinds == ["pretrain", "base"] + ["sft"] * 8
    pretrain, base, *sft = old.cells
    assert pretrain.identity["pretrain"]["value_mode"] == "vanilla" and pretrain.seed is None
    assert base.construction == "base" and base.n_per_ability == 0 and base.needs == pretrain.id
    assert {c.construction for c in sft} == {"curated", "synthetic", "mix"}
    assert all(
        c.recipe["learning_rate"] == 0.001 and c.sweep == {"learning_rate": 0.001} for c in sft
    )
    raw = json.loads(json.dumps(old.grid.raw))
    raw["bases"][0]["pretrain"]["config"] = "recipes/configs/pretrain/xs.yaml"
    replanned = expand(load_grid(write_grid(tmp_path / "g.yaml", raw)))
    assert [c.id for c in replanned] == [c.id for c in old.cells]
    (tmp_path / "study").mkdir()
    bad = {"grid": old.grid.raw, "cells": [{**pretrain.to_dict(), "wandb": 1}]}
    (tmp_path / "study" / "plan.json").write_text(json.dumps(bad))
    with pytest.raises(PlanError, match=r"plan.json: cell pretrain-xs-\w+: unknown key\(s\) wandb"):
        read_plan(tmp_path / "study")


def test_loading_a_grid_imports_no_torch():
    code = (
        "import sys; from doit.grid.spec import load_grid; "
        "g = load_grid('recipes/grids/paper.yaml'); assert g.gpus == 8; "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_every_base_keeps_its_merged_pretraining_config():
    """What built a base (its config less output_dir, plus the grid's overrides) is key for key
    what it was before the pretraining configs became one per size (fixtures/
    merged_pretrain_configs.json): pretrain cell ids and built bases' doit_base.json hold."""
    recorded = json.loads((FIXTURES / "merged_pretrain_configs.json").read_text())
    for path, bases in recorded["bases"].items():
        grid = load_grid(path)
        assert {b.name: base_identity(b) for b in grid.bases} == bases, path
    configs = recorded["configs"]  # each old <arch>_<size>.yaml is <size>.yaml + value_mode
    for name, old in configs.items():
        arch, size = name.split("_")
        new = yaml.safe_load((REPO / f"recipes/configs/pretrain/{size}.yaml").read_text())
        assert {**{k: v for k, v in new.items() if k != "output_dir"}, "value_mode": arch} == old
    ladder = load_grid("recipes/grids/ladder.yaml")  # the old ladder's cells: config + --seed
    for base in ladder.bases:
        built = base_identity(base.at_seed(0))["pretrain"]
        assert built == {**configs[base.name], "seed": 0}, base.name


def test_a_base_pretrained_from_another_config_is_never_reused_silently(tmp_path, tiny_base):
    from doit.grid.plan import BASE_IDENTITY

    built = tmp_path / "xs"
    shutil.copytree(tiny_base, built)
    pretrain = {"config": "recipes/configs/pretrain/xs.yaml", "overrides": {"seed": 0}}
    bases = [{"name": "xs", "arch": "vanilla", "path": str(built), "pretrain": pretrain}]
    grid = load_grid(write_grid(tmp_path / "g.yaml", grid_dict(tiny_base, bases=bases)))
    (built / BASE_IDENTITY).write_text(json.dumps(base_identity(grid.bases[0])))
    assert not any(c.kind == "pretrain" for c in expand(grid))  # built as declared: reused
    bases[0]["pretrain"] = {**pretrain, "overrides": {"seed": 1}}
    grid = load_grid(write_grid(tmp_path / "g.yaml", grid_dict(tiny_base, bases=bases)))
    with pytest.raises(
        PlanError, match=r"pretrained from another config \(differs in: pretrain.seed"
    ):
        expand(grid)


def test_formulation_is_an_axis_and_in_the_id_only_when_not_letter(tmp_path, tiny_base):
    letter = ids(plan(tmp_path, tiny_base))
    assert ids(plan(tmp_path, tiny_base, formulation="letter")) == letter  # the default
    both = plan(tmp_path, tiny_base, formulation=["letter", "text"])
    by_label = ids(both)
    assert {k: v for k, v in by_label.items() if "-text-" not in k} == letter
    text = {k: v for k, v in by_label.items() if "-text-" in k}
    assert sorted(text) == [
        "tiny-n0000-text-s0",
        "tiny-n0001-no_math-text-s0",
        "tiny-n0001-text-s0",
    ]
    assert not set(text.values()) & set(letter.values())
    cells = {c.id: c for c in both}
    assert {cells[i].formulation for i in text.values()} == {"text"}
    assert cells[text["tiny-n0001-text-s0"]].recipe["formulation"] == "text"
    assert "formulation" not in cells[letter["tiny-n0001-s0"]].recipe  # the recipe's default
    scored_too = ids(plan(tmp_path, tiny_base, eval_formulations=["letter", "text"]))
    assert scored_too.keys() == letter.keys() and not set(scored_too.values()) & set(
        letter.values()
    )


def test_base_seed_plans_the_untuned_cells_at_its_seeds_only(tmp_path, tiny_base):
    every = ids(plan(tmp_path, tiny_base, seed=[0, 1]))
    once = ids(plan(tmp_path, tiny_base, seed=[0, 1], base_seed=[0]))
    assert {"tiny-n0000-s0", "tiny-n0000-s1"} <= every.keys()
    assert set(every) - set(once) == {"tiny-n0000-s1"}  # the other cells, ids unchanged
    assert all(once[k] == every[k] for k in once)


def test_held_out_items_is_in_the_id_only_when_not_all(tmp_path, tiny_base):
    every = ids(plan(tmp_path, tiny_base))
    assert ids(plan(tmp_path, tiny_base, held_out_items="all")) == every  # the default
    first = ids(plan(tmp_path, tiny_base, held_out_items=100))
    assert first.keys() == every.keys() and not set(first.values()) & set(every.values())
    assert set(ids(plan(tmp_path, tiny_base, held_out_items=50)).values()).isdisjoint(
        first.values()
    )
    same = {"valid": 100, "test": 100}  # equal splits read as one count: the same ids
    assert ids(plan(tmp_path, tiny_base, held_out_items=same)) == first
    fewer_valid = {"valid": 100, "test": "all"}
    split_ids = ids(plan(tmp_path, tiny_base, held_out_items=fewer_valid))
    assert not set(split_ids.values()) & (set(first.values()) | set(every.values()))
    grid = load_grid(
        write_grid(tmp_path / "v.yaml", grid_dict(tiny_base, held_out_items=fewer_valid))
    )
    assert (grid.items_scored("valid"), grid.items_scored("test")) == (100, None)


def test_formulation_is_the_grids_key_not_the_recipes(tmp_path, tiny_base):
    sft = grid_dict(tiny_base)["sft"]
    sft = {**sft, "overrides": {**sft["overrides"], "formulation": "text"}}
    with pytest.raises(PlanError, match="sft: formulation is a grid key"):
        plan(tmp_path, tiny_base, sft=sft)
    ladder = {
        "name": "l",
        "doit_dir": str(tmp_path),
        "formulation": "text",
        "bases": [
            {
                "name": "xs",
                "arch": "vanilla",
                "path": str(tmp_path / "xs"),
                "pretrain": {"config": "recipes/configs/pretrain/xs.yaml"},
            }
        ],
    }
    with pytest.raises(GridError, match="formulation: only fine-tuning cells use it"):
        load_grid(write_grid(tmp_path / "ladder.yaml", ladder))


def test_the_reference_study_grid_parses_with_its_budget_cuts():
    grid = load_grid(REPO / "studies/micro_reference/grid.yaml")
    assert [b.name for b in grid.bases] == [
        "vanilla_xs",
        "vanilla_s",
        "vanilla_l",
        "resformer_s",
        "svformer_s",
    ]
    assert grid.seeds == (0, 1, 2) and grid.formulations == ("text",)
    assert (grid.items_scored("valid"), grid.items_scored("test")) == (100, None)


def test_the_curriculum_validation_grid_parses_with_its_transfer_and_mixture_cells():
    grid = load_grid(REPO / "studies/curriculum_micro/grid.yaml")
    assert [b.name for b in grid.bases] == ["vanilla_xs", "vanilla_s"]
    assert tuple(grid.data["loo"].bases) == ("vanilla_xs", "vanilla_s")
    assert grid.data["random_mixes"].total == 1280 and grid.formulations == ("text",)
    assert (grid.items_scored("valid"), grid.items_scored("test")) == (100, None)


def test_the_seed_noise_grid_parses_and_ends_its_schedule_at_a_tenth_of_the_peak():
    grid = load_grid(REPO / "studies/seed_noise_micro/grid.yaml")
    assert [b.name for b in grid.bases] == ["vanilla_s"] and grid.seeds == (0, 1, 2)
    over = grid.sft.overrides
    assert over["lr_scheduler_kwargs"]["lr_end"] == pytest.approx(over["learning_rate"] / 10)
