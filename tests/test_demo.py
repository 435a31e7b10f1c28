"""`recipes/demo.py` (what `make demo` runs) end to end on a tiny study: a trimmed micro corpus,
two missing bases pretrained first (two steps each; their params come from pretraining), n = 0, 1, 4 per ability, two leave-one-out cells, the
analysis and a 40-item curriculum trained and compared; then its report checked and a rerun
that reuses everything. One worker: every cell runs in the demo's own process, on one thread,
so the test shares the machine like any other (the worker-process path `make demo` takes with
two workers is tests/grid/test_run.py's)."""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from doit.data import abilities as ab
from doit.data.manifest import write_manifest
from tests.grid.conftest import write_grid
from tests.tiny import REPO, TINY_PRETRAIN

pytestmark = pytest.mark.slow

EVAL_ITEMS, POOL_ITEMS, TEXT_LINES = 6, 24, 300


def trimmed(micro: Path, out: Path) -> Path:
    """The micro corpus with EVAL_ITEMS items per valid/test file, POOL_ITEMS per pool file and
    the first TEXT_LINES lines of pretraining text; its manifest rewritten (kind micro)."""
    shutil.copytree(micro, out, ignore=shutil.ignore_patterns("manifest.json"))
    for path in (out / "curated").rglob("*.json"):
        keep = EVAL_ITEMS if path.parent.name in ("valid", "test") else POOL_ITEMS
        lines = path.read_text(encoding="utf-8").splitlines()[:keep]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for path in (out / "pretrain").glob("*.txt"):
        lines = path.read_text(encoding="utf-8").splitlines()[:TEXT_LINES]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_manifest(out, kind="micro", seed=0, args={}, synthetic_data=True)
    return out


def tiny_demo_grid(tmp_path: Path, data: Path) -> Path:
    files = {
        "train_file": str(data / "pretrain" / "train.txt"),
        "valid_file": str(data / "pretrain" / "valid.txt"),
        "tokenizer_path": str(data / "tokenizer"),
    }
    bases = [
        {
            "name": name,
            "arch": "vanilla",
            "path": str(tmp_path / "bases" / name),
            "pretrain": {
                "config": str(REPO / "recipes/configs/pretrain/xs.yaml"),
                "overrides": {**TINY_PRETRAIN, **files, "hidden_size": hidden, "seed": 0},
            },
        }
        for name, hidden in (("small", 32), ("large", 64))
    ]
    grid = {
        "name": "tinydemo",
        "doit_dir": str(data),
        "formulation": "text",
        "bases": bases,
        "data": {
            "per_ability": [1, 4],
            "loo": {"values": [1], "abilities": ["math", "code"], "bases": ["small"]},
        },
        "seed": [0],
        "sft": {
            "config": str(REPO / "recipes/configs/sft/micro/full.yaml"),
            "overrides": {"num_train_epochs": 1, "eval_strategy": "no", "disable_tqdm": True},
        },
        "max_new_tokens": {"mc": 4, "tf": 4, "multiselect": 4, "cloze": 6, "math": 6},
        "eval_epochs": "last",
        "eval_batch_size": 16,
        "keep": "last",
    }
    return write_grid(tmp_path / "tinydemo.yaml", grid)


def demo_args(tmp_path: Path, data: Path, grid: Path) -> list[str]:
    study = ["--study", str(tmp_path / "study"), "--budget", "40", "--replicates", "100"]
    return ["--data", str(data), "--grid", str(grid), *study, "--workers", "1"]


def demo(tmp_path: Path, data: Path, grid: Path):
    """`python recipes/demo.py ...` as a process of its own: what it printed."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(REPO),
        "DOIT_CACHE": str(tmp_path / "cache"),
    }
    proc = subprocess.run(
        [sys.executable, str(REPO / "recipes" / "demo.py"), *demo_args(tmp_path, data, grid)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout


def demo_in_process(tmp_path: Path, data: Path, grid: Path, capsys, monkeypatch):
    """The same command as this process's call of the recipe's ``main`` (a rerun, which decides
    what to reuse, without the ~10 s of imports a new process pays): what it printed."""
    monkeypatch.setenv("DOIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(REPO)
    main = runpy.run_path(str(REPO / "recipes" / "demo.py"), run_name="demo")["main"]
    capsys.readouterr()
    code = main(demo_args(tmp_path, data, grid))
    printed = capsys.readouterr()
    assert code == 0, printed.out[-3000:] + printed.err[-5000:]
    return printed.out


def test_the_demo_runs_the_whole_study_and_a_rerun_reuses_it(
    tmp_path, micro_dir, capsys, monkeypatch
):
    data = trimmed(micro_dir, tmp_path / "micro")
    grid = tiny_demo_grid(tmp_path, data)
    printed = demo(tmp_path, data, grid)
    for step in ("corpus", "bases", "cells", "analysis", "curriculum"):
        assert f"] {step}: " in printed and "(budget" in printed, step
    summary = printed.split("[5/5] curriculum: ")[1].splitlines()[1:]
    assert 3 <= len(summary) <= 10 and summary[-1].startswith("report: ")
    assert summary[0].startswith("study: synthetic micro DoIT (not DoIT)")
    graded = [x for x in summary if x.startswith(("against the reference", "reference study: "))]
    assert len(graded) == 1, summary  # graded against studies/micro_reference, or said not to be
    curriculum = [x for x in summary if x.startswith("curriculum: ")]
    assert len(curriculum) == 1 and "a seed prior (seed_sd=" in curriculum[0], summary

    study, out = tmp_path / "study", tmp_path / "study" / "analysis"
    results = pd.read_csv(study / "results.csv")
    assert results["score"].dropna().between(0, 100).all() and len(results)
    assert set(ab.ABILITY_KEYS) <= set(results["ability"])
    for name in ("small", "large"):  # pretrained first, as the grid declared them
        assert (tmp_path / "bases" / name / "DONE").is_file()
        assert (tmp_path / "bases" / name / "doit_base.json").is_file()
    params = results.groupby("base")["params"].first()  # params: null -> pretraining's counts
    assert params["large"] > params["small"] > 0
    assert (results["params_total"] > results["params"]).all()
    md = (out / "report.md").read_text(encoding="utf-8")
    page = (out / "report.html").read_text(encoding="utf-8")
    groups = md.split("## Sensitivity and groups")[1].split("\n## ")[0]
    assert all(f"| {k} |" in groups for k in ab.ABILITY_KEYS)
    assert "synthetic micro DoIT" in md.split("## ")[0]  # said before any section
    order = [
        md.index(x)
        for x in (
            "![scaling_data]",
            "## Sensitivity and groups",
            "## Curriculum",
            "## Validation",
            "<details>",
        )
    ]
    assert order == sorted(order)  # headline figure, groups, curriculum, ..., folded tables
    assert "<details><summary>" in page and 'class="scroll"' in page
    assert page.count("data:image/png;base64,") >= 5  # the four figures and the curriculum's
    for png in [
        *(out / "figures").glob("*.png"),
        out / "curriculum" / "figures" / "curriculum.png",
    ]:
        pixels = matplotlib.image.imread(png)
        assert float(np.std(pixels)) > 0.01, png  # drawn, not a blank canvas
    differences = pd.read_csv(out / "curriculum" / "validate" / "differences.csv")
    assert {"marginal"} == set(differences["policy"]) and "macro" in set(differences["ability"])
    kept = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert kept["lines"] == summary  # summary.json keeps what was printed, for a rerun

    again = demo_in_process(tmp_path, data, grid, capsys, monkeypatch)
    assert "up to date with the study's results (reused)" in again
    assert "[4/5]" not in again  # neither the analysis nor the curriculum ran again
    assert "this run" in again
