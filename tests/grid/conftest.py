"""A tiny study: a random 2-layer base, the fixture DoIT download, a grid written per test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.train.tiny import FIXTURE, REPO, make_base

MICRO = REPO / "recipes" / "configs" / "sft" / "micro" / "full.yaml"
BUDGETS = {"mc": 4, "tf": 4, "multiselect": 4, "cloze": 4, "math": 8}


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory) -> Path:
    return make_base(tmp_path_factory.mktemp("grid_base") / "tiny")


@pytest.fixture(autouse=True)
def doit_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DOIT_CACHE", str(tmp_path_factory.getbasetemp() / "doit_cache"))


def grid_dict(base: Path, **keys) -> dict:
    """Three cells: the untuned base (n = 0), n = 1, and n = 1 without math (leave-one-out)."""
    grid = {
        "name": "tiny",
        "doit_dir": str(FIXTURE),
        "bases": [{"name": "tiny", "arch": "llama", "params": 1000, "path": str(base)}],
        "data": {"per_ability": [1], "loo": {"values": [1], "abilities": ["math"]}},
        "seed": [0],
        "sft": {"config": str(MICRO),
                "overrides": {"num_train_epochs": 2, "min_steps": 0, "logging_steps": 1,
                              "disable_tqdm": True}},
        "max_new_tokens": BUDGETS,
        "eval_epochs": "all",
        "eval_batch_size": 8,
        "keep": "scored",
    }  # fmt: skip
    grid.update(keys)
    return grid


def write_grid(path: Path, grid: dict) -> Path:
    path.write_text(yaml.safe_dump(grid, sort_keys=False), encoding="utf-8")
    return path


def grid_cli(*args: str, env: dict | None = None, check: bool = True, timeout: int = 600):
    """``python -m doit.grid ...`` in a subprocess, one thread, the test's cache."""
    full = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "doit.grid", *args], cwd=REPO, env=full,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip
    if check and proc.returncode != 0:
        raise AssertionError(f"doit.grid {' '.join(args)}: exit {proc.returncode}\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")  # fmt: skip
    return proc
