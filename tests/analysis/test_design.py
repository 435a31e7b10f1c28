"""`doit analysis design` (issue #31): the cheapest designs meeting the targets, the best as a
grid `doit grid plan` accepts, one line per unmet ability with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from doit.analysis.cli import main
from doit.analysis.design import read_candidates

REPO = Path(__file__).resolve().parents[2]
CANDIDATES = "recipes/power/paper.yaml"


@pytest.fixture(autouse=True)
def _repo(monkeypatch):
    monkeypatch.chdir(REPO)


CANDIDATE_COUNTS = {"paper.yaml": 72, "micro.yaml": 81}  # designs per shipped candidate file


@pytest.mark.parametrize("path", sorted((REPO / "recipes" / "power").glob("*.yaml")), ids=str)
def test_the_shipped_candidate_files_parse_and_comment_every_key(path):
    c = read_candidates(path)
    expected = CANDIDATE_COUNTS[path.name]
    assert len(c.base_sets) * len(c.ns) * len(c.items) * len(c.seeds) == expected
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith(("#", "- [", "- name")) and ":" in line:
            assert "#" in line, line


def test_the_micro_candidates_cost_the_reference_study_as_it_was_measured():
    """recipes/power/micro.yaml's costs come from the reference study's timings: its own design
    (3 vanilla bases, n = 4 ... 256, 400 items, 3 seeds) costs within 15% of the train_s and
    eval_s its results table records for those bases."""
    from doit.analysis.design import cost

    c = read_candidates(REPO / "recipes/power/micro.yaml")
    rows = pd.read_csv(REPO / "studies/micro_reference/results.csv.gz")
    rows = rows[rows["base"].str.startswith("vanilla")]
    measured = rows.drop_duplicates("cell")["train_s"].sum()
    measured += rows.drop_duplicates(["cell", "epoch"])["eval_s"].sum()
    planned = cost(c, ["vanilla_xs", "vanilla_s", "vanilla_l"], [4, 16, 64, 256], 400, 3)
    assert planned == pytest.approx(measured, rel=0.15)


def test_the_best_design_is_written_as_a_grid_the_planner_accepts(tmp_path, capsys):
    out = tmp_path / "d"
    argv = ["design", "--mde", "data=4,size=5", "--candidates", CANDIDATES, "--out", str(out)]
    assert main([*argv, "--max-cost", "3000", "--seed-sd", "0.15"]) == 0
    designs = pd.read_csv(out / "designs.csv")
    pareto = pd.read_csv(out / "pareto.csv")
    assert len(designs) == 72 and pareto["cost"].is_monotonic_increasing
    assert pareto["decided"].is_monotonic_increasing and pareto["decided"].iloc[-1] == 10
    best = (
        designs[designs["cost"] <= 3000]
        .sort_values(["decided", "cost"], ascending=[False, True])
        .iloc[0]
    )
    assert f"best within 3000 GPU-hours: {best['design']}" in capsys.readouterr().out
    from doit.grid.cli import main as grid

    plan = tmp_path / "plan"
    items = str(best["items"])
    assert (
        grid(["plan", str(out / "grid.yaml"), "--out", str(plan), "--no-check", "--items", items])
        == 0
    )
    rows = json.loads((plan / "plan.json").read_text())["power"]["rows"]
    chosen = pd.read_csv(out / "best.csv").set_index("ability")
    for r in rows:  # the planner's table of the written grid is the design's own
        if r["ability"] != "macro":
            assert r["mde_data"] == pytest.approx(chosen.loc[r["ability"], "mde_data"])


def test_unmet_targets_are_one_line_per_ability_and_exit_2(tmp_path, capsys):
    argv = ["design", "--mde", "data=3", "--candidates", CANDIDATES, "--out", str(tmp_path / "d")]
    assert main([*argv, "--max-cost", "400"]) == 2
    lines = [
        ln
        for ln in capsys.readouterr().out.splitlines()
        if ": not decided" in ln or ": no candidate" in ln
    ]
    assert len(lines) == 10 and lines[0].startswith("biology: ")


@pytest.mark.parametrize(
    "mde, said",
    [("data=2", "never at or below the margin delta=2"), ("speed=4", "'speed': expected")],
)
def test_bad_targets_are_one_line_exit_2(tmp_path, capsys, mde, said):
    argv = ["design", "--mde", mde, "--candidates", CANDIDATES, "--out", str(tmp_path / "d")]
    assert main([*argv, "--max-cost", "100"]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


def test_a_pilot_gives_the_design_its_inputs(tmp_path, capsys):
    from doit.analysis import synthetic as syn

    pilot = syn.planted_world("b", {"history": "smooth"}, seed_sd=0.4, rng=2).write(
        tmp_path / "pilot"
    )
    out = tmp_path / "d"
    argv = ["design", "--mde", "data=4,size=5", "--candidates", CANDIDATES, "--out", str(out)]
    code = main([*argv, "--max-cost", "2000", "--pilot", str(pilot)])
    assert code == 0, capsys.readouterr().out  # the pilot's ability and the priors' nine
    best = pd.read_csv(out / "best.csv").set_index("ability")
    assert best.loc["history", "inputs"].startswith("pilot (400 items")
    assert best.loc["math", "inputs"] == "priors (not in the pilot)"
