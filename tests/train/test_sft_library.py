"""Fine-tuning as a library call: `doit.train.sft.run` many times in one process gives what one
process per run gives, and leaves the process as it found it."""

import logging
import os

import pytest
import torch
from safetensors.torch import load_file

from doit.train.rundir import read_metrics
from tests.train.conftest import PY, recipe_args, run_recipe

pytestmark = pytest.mark.slow

TIMING = ("wall_s", "seconds", "train_runtime", "total_wall_s", "finished", "session")


def comparable(rows: list[dict]) -> list[dict]:
    """metrics.jsonl rows without their timings (wall clock and throughput)."""
    return [
        {
            k: v
            for k, v in r.items()
            if k not in TIMING and not k.endswith(("_per_second", "_runtime"))
        }
        for r in rows
    ]


def assert_same_run(a, b):
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert wa.keys() == wb.keys()
    worst = max(float((wa[k] - wb[k]).abs().max()) for k in wa)
    assert worst <= 1e-6, f"weights differ by {worst}"
    assert comparable(read_metrics(a)) == comparable(read_metrics(b))


def test_two_runs_in_one_process_equal_two_processes(base, tmp_path, monkeypatch):
    from doit.train.sft import run
    from doit.train.sft.args import parse_args

    cache = tmp_path / "cache"
    monkeypatch.setenv("DOIT_CACHE", str(cache))
    runs = {
        "a": dict(per_ability=1, num_train_epochs=2, seed=0),
        "b": dict(
            per_ability=1,
            num_train_epochs=1,
            seed=1,
            learning_rate=2e-3,
            exclude_abilities=["ethics"],
        ),
    }
    for name, keys in runs.items():
        run_recipe(PY, recipe_args(base, tmp_path / "proc" / name, **keys), cache)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the subprocesses (OMP_NUM_THREADS=1)
    env = dict(os.environ)
    try:
        results = [
            run(parse_args(recipe_args(base, tmp_path / "lib" / name, **keys)))
            for name, keys in runs.items()
        ]
    finally:
        torch.set_num_threads(threads)
    assert dict(os.environ) == env
    # doit's own handler once (pytest attaches its capture handlers to non-propagating loggers)
    assert sum(getattr(h, "_doit", False) for h in logging.getLogger("doit").handlers) == 1
    for name, result in zip(runs, results):
        assert result.trained and result.run_dir == tmp_path / "lib" / name
        assert result.final["kind"] == "end"
        assert len(result.checkpoints) == runs[name]["num_train_epochs"]  # one per epoch
        assert result.final["step"] == int(result.checkpoints[-1].name.split("-")[1])
        assert_same_run(tmp_path / "proc" / name, result.run_dir)
    again = run(parse_args(recipe_args(base, tmp_path / "lib" / "a", **runs["a"])))
    assert not again.trained and again.final["step"] == results[0].final["step"]
