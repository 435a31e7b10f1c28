"""`doit grid plan`'s power table (issue #31): --no-check on the paper's grid, a pilot, priors,
and the one-line errors (exit 2) that leave no plan.json behind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from doit.grid.cli import main

REPO = Path(__file__).resolve().parents[2]
PAPER = "recipes/grids/paper.yaml"


@pytest.fixture(autouse=True)
def _repo(monkeypatch):
    monkeypatch.chdir(REPO)  # the grid's relative files (mixes, recipes)


def test_no_check_plans_the_papers_grid_without_bases_or_corpus(tmp_path, capsys):
    out = tmp_path / "paper"
    assert main(["plan", PAPER, "--out", str(out), "--no-check"]) == 0
    printed = capsys.readouterr().out
    assert "mde_data" in printed and "dataset card" in printed
    plan = json.loads((out / "plan.json").read_text())
    assert plan["cells"] == [] and plan["no_check"] is True
    rows = {r["ability"]: r for r in plan["power"]["rows"]}
    assert len(rows) == 11 and rows["macro"]["mde_policy"] > rows["history"]["mde_data"]
    assert rows["history"]["items"] == 100 and rows["history"]["seeds"] == 1
    # three seeds shrink every MDE; the status shows the table; run refuses a power-only plan
    assert (
        main(["plan", PAPER, "--out", str(tmp_path / "s3"), "--no-check", "--set", "seed=[0,1,2]"])
        == 0
    )
    three = {
        r["ability"]: r
        for r in json.loads((tmp_path / "s3/plan.json").read_text())["power"]["rows"]
    }
    assert three["history"]["mde_data"] < rows["history"]["mde_data"]
    assert three["history"]["mde_size"] < rows["history"]["mde_size"]
    capsys.readouterr()
    assert main(["status", str(out)]) == 0
    assert "what the grid can decide" in capsys.readouterr().out
    assert main(["run", str(out)]) == 2
    assert "--no-check" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--score-levels", "histroy=60"], "unknown ability 'histroy'"),
        (["--score-levels", "120"], "score 120 is out of range (0, 100) points"),
        (["--item-corr", "1.5"], "item_corr 1.5 is out of range [0, 1)"),
        (["--seed-sd", "-1"], "seed_sd -1 is out of range"),
    ],
)
def test_bad_priors_are_one_line_exit_2_and_write_nothing(tmp_path, capsys, flags, said):
    out = tmp_path / "p"
    assert main(["plan", PAPER, "--out", str(out), "--no-check", *flags]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1
    assert not (out / "plan.json").exists()


def _planted_study(folder: Path, items: bool) -> Path:
    from doit.analysis import synthetic as syn

    world = syn.planted_world("b", {"history": "smooth", "code": "smooth"}, seed_sd=0.4, rng=1)
    world.write(folder)
    if not items:
        shutil.rmtree(folder / "items")
    return folder


def test_a_pilot_gives_the_inputs_and_says_so(tmp_path, capsys):
    pilot = _planted_study(tmp_path / "pilot", items=True)
    out = tmp_path / "p"
    assert main(["plan", PAPER, "--out", str(out), "--no-check", "--pilot", str(pilot)]) == 0
    rows = {r["ability"]: r for r in json.loads((out / "plan.json").read_text())["power"]["rows"]}
    assert rows["history"]["inputs"].startswith("pilot (400 items, seed sd: pilot")
    assert rows["history"]["item_corr"] > 0 and rows["history"]["seed_sd"] > 0
    assert rows["math"]["inputs"] == "priors (not in the pilot)"


def test_a_pilot_without_per_item_rows_is_one_line_exit_2(tmp_path, capsys):
    pilot = _planted_study(tmp_path / "pilot", items=False)
    assert (
        main(["plan", PAPER, "--out", str(tmp_path / "p"), "--no-check", "--pilot", str(pilot)])
        == 2
    )
    err = capsys.readouterr().err
    assert "no per-item rows" in err and err.count("\n") == 1


def test_a_checked_plan_counts_the_corpus_items_and_keeps_the_table(tiny_base, tmp_path, capsys):
    from tests.grid.conftest import grid_dict, write_grid

    grid = grid_dict(tiny_base)  # the fixture's pools hold 1-2 items: one n, two bases
    grid["bases"].append({**grid["bases"][0], "name": "tiny4", "params": 4000})
    path = write_grid(tmp_path / "g.yaml", grid)
    out = tmp_path / "study"
    assert main(["plan", str(path), "--out", str(out), "--seed-sd", "0.2"]) == 0
    assert "items per ability from the corpus's test files" in capsys.readouterr().out
    plan = json.loads((out / "plan.json").read_text())
    assert plan["cells"] and "no_check" not in plan
    rows = {r["ability"]: r for r in plan["power"]["rows"]}
    assert rows["math"]["mde_size"] > 2 and rows["math"]["mde_data"] is None  # one n
    assert rows["math"]["seed_sd"] == 0.2 and rows["macro"]["mde_policy"] is not None


def test_a_grid_whose_bases_lack_params_plans_cells_without_power(tiny_base, tmp_path, capsys):
    from tests.grid.conftest import grid_dict, write_grid

    grid = grid_dict(tiny_base)
    del grid["bases"][0]["params"]
    grid["bases"][0]["pretrain"] = {"config": "recipes/configs/pretrain/xs.yaml"}
    path = write_grid(tmp_path / "g.yaml", grid)
    code = main(["plan", str(path), "--out", str(tmp_path / "s")])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "power not planned: " in printed.out and "params unknown" in printed.out
    assert main(["plan", str(path), "--out", str(tmp_path / "n"), "--no-check"]) == 2


def test_a_base_without_params_is_priced_at_its_built_count_once_built(tmp_path):
    from doit.grid.power import base_params
    from doit.grid.spec import Base
    from doit.train import rundir

    base = Base(name="xs", arch="vanilla", path=str(tmp_path / "xs"))
    assert base_params(base) is None  # not built: the plan says to set params or build it
    rundir.write_done(tmp_path / "xs", {"kind": "end", "params_non_embedding": 201280})
    assert base_params(base) == 201280.0
    assert base_params(Base(name="s", arch="vanilla", path="x", params=443232)) == 443232.0
