"""The study runner's overhead per micro cell, and 2 x 1 versus 1 x 2 threads, in one run.

    python bench/grid.py [--base DIR] [--corpus data/generated/micro] [--threads 2] [--quick]

One small grid of real micro cells (a micro base fine-tuned with the micro SFT recipe on the
generated micro corpus, then scored on valid + test) is planned into three fresh study folders
(each with its own tokenised-data cache, so every run pays the same tokenisation) and run
three ways, one after another:

- in-process: ``python -m doit.grid run STUDY --threads T`` (every cell in that one process);
- one process per cell: ``python -m doit.grid run-cell STUDY CELL --threads T``, cell by cell;
- 2 x 1: ``python -m doit.grid run STUDY --max-parallel 2 --threads 1`` (two workers, each
  forked from a server that imported torch and transformers once);
- 2 x 1, exec: the same with ``DOIT_WORKER_START=exec`` (each worker a new interpreter, as the
  runner started them before the fork server).

``--modes`` picks some of them (default: all four).

Overhead = the run's wall time minus the cells' own train + score time (each cell's ``train_s``
plus its ``eval_s`` summed over its scored (epoch, split), which the table repeats on every
ability row). Throughput = cells per minute of wall time; the in-process run is the 1 x 2 run.
Only the data cells run (``--cells``; the untuned n = 0 cells the plan adds are left out).
A missing corpus is built (``python -m doit.data micro``), a missing base pretrained for a
quarter epoch (xs.yaml, vanilla). Full: n = 4, 16 x seeds 0, 1 (4 cells, about 10 minutes on
2 cores); ``--quick``: n = 4 x seeds 0, 1 (2 cells, about 4 minutes). The 1-minute load
average at each mode's start is printed: other processes on the machine distort the numbers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from fnmatch import fnmatch
from pathlib import Path

import yaml

from doit.grid import read_results
from doit.grid.plan import read_plan
from doit.io import read_json

REPO = Path(__file__).resolve().parents[1]
SFT = REPO / "recipes" / "configs" / "sft" / "micro" / "full.yaml"
PRETRAIN = REPO / "recipes" / "configs" / "pretrain" / "xs.yaml"
DATA_CELLS = "*-n00[0-9][!0]-*"  # n = 1..99 per ability: the fine-tuned cells, not n = 0
BUDGETS = {"mc": 8, "tf": 8, "multiselect": 8, "cloze": 16, "math": 48}
OVERRIDES = {"num_train_epochs": 2, "min_steps": 0, "disable_tqdm": True}


MODES = ("in-process", "per-cell", "workers", "workers-exec")


def call(args: list[str], threads: int, cache: Path, log: Path, **extra) -> float:
    """Run ``python <args>`` from the repository root; returns its wall seconds."""
    env = {
        **os.environ,
        **extra,
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "DOIT_CACHE": str(cache),
    }
    started = time.perf_counter()
    with log.open("a", encoding="utf-8") as fh:
        rc = subprocess.run(
            [sys.executable, *args], cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT
        ).returncode
    wall = time.perf_counter() - started
    if rc:
        sys.exit(f"python {' '.join(args)} exited {rc} (log: {log})")
    return wall


def ensure_inputs(base: Path, corpus: Path, work: Path) -> dict:
    """Build the corpus and pretrain the base when missing; returns the base's parameter counts."""
    if not (corpus / "manifest.json").is_file():
        print(f"building the micro corpus in {corpus} ...", flush=True)
        call(["-m", "doit.data", "micro", "--out", str(corpus)], 2, work / "cache", work / "log")
    if not (base / "DONE").is_file():
        print(f"pretraining a micro base in {base} (vanilla_xs, 0.25 epoch) ...", flush=True)
        call(
            [
                "-m",
                "doit",
                "pretrain",
                "--config",
                str(PRETRAIN),
                "--output_dir",
                str(base),
                "--num_train_epochs",
                "0.25",
                "--micro_dir",
                str(corpus),
            ],
            2,
            work / "cache",
            work / "log",
        )
    done = read_json(base / "DONE")
    return {"params": done["params_non_embedding"], "params_total": done["params_total"]}


def write_grid(path: Path, base: Path, corpus: Path, params: dict, quick: bool) -> Path:
    grid = {
        "name": "bench",
        "doit_dir": str(corpus.resolve()),
        "bases": [{"name": "micro", "arch": "vanilla", **params, "path": str(base.resolve())}],
        "data": {"per_ability": [4] if quick else [4, 16]},
        "seed": [0, 1],
        "sft": {"config": str(SFT), "overrides": OVERRIDES},
        "max_new_tokens": BUDGETS,
        "eval_epochs": "last",
        "eval_batch_size": 32,
        "keep": "last",
    }
    path.write_text(yaml.safe_dump(grid, sort_keys=False), encoding="utf-8")
    return path


def plan(grid: Path, study: Path, work: Path) -> list[str]:
    """Plan ``grid`` into a fresh ``study``; returns the ids of the cells the bench runs."""
    shutil.rmtree(study, ignore_errors=True)
    call(["-m", "doit.grid", "plan", str(grid), "--out", str(study)], 1, work, work / "log")
    return [c.id for c in read_plan(study).cells if fnmatch(c.id, DATA_CELLS)]


def run_mode(mode: str, grid: Path, work: Path, threads: int) -> dict:
    """Plan a fresh study and run it one way; returns the mode's measurements."""
    study, cache, log = work / mode, work / f"cache-{mode}", work / f"{mode}.log"
    ids = plan(grid, study, work)
    shutil.rmtree(cache, ignore_errors=True)
    load = os.getloadavg()[0]  # other processes on the machine slow every mode down
    print(f"{mode}: {len(ids)} cells (load average {load:.1f}) ...", flush=True)
    run = ["-m", "doit.grid", "run", str(study), "--cells", DATA_CELLS]
    if mode == "in-process":
        wall = call([*run, "--threads", str(threads)], threads, cache, log)
    elif mode == "per-cell":
        wall = sum(
            call(
                ["-m", "doit.grid", "run-cell", str(study), cid, "--threads", str(threads)],
                threads,
                cache,
                log,
            )
            for cid in ids
        )
    else:
        start = "exec" if mode == "workers-exec" else "forkserver"
        run += ["--max-parallel", "2", "--threads", "1"]
        wall = call(run, 1, cache, log, DOIT_WORKER_START=start)
    own = cell_seconds(study)
    if sorted(own.index) != sorted(ids):
        sys.exit(f"{mode}: expected rows of {len(ids)} cells, got {len(own)} (log: {log})")
    return {"mode": mode, "cells": len(ids), "wall": wall, "own": float(own.sum()), "load": load}


def cell_seconds(study: Path):
    """Each cell's own train + score seconds: train_s once, eval_s once per (epoch, split)."""
    df = read_results(study)
    train = df.groupby("cell")["train_s"].first().fillna(0.0)
    scored = df.drop_duplicates(["cell", "epoch", "split"]).groupby("cell")["eval_s"].sum()
    return train.add(scored, fill_value=0.0)


def report(rows: list[dict], threads: int) -> None:
    print(
        f"\n{'mode':<28}{'cells':>6}{'wall s':>9}{'cells/min':>10}{'train+score s':>15}"
        f"{'overhead s/cell':>17}{'overhead %':>12}{'load':>6}"
    )
    labels = {
        "in-process": f"in-process (1 x {threads})",
        "per-cell": f"process per cell (1 x {threads})",
        "workers": "2 workers x 1 thread",
        "workers-exec": "2 x 1, exec per cell",
    }
    for r in rows:
        per_min = r["cells"] / r["wall"] * 60
        over = r["wall"] - r["own"]
        cols = f"{over / r['cells']:>17.2f}{100 * over / r['own']:>11.1f}%"
        if r["mode"].startswith("workers"):  # two cells at once: wall minus the sum means nothing
            cols = f"{'-':>17}{'-':>12}"
        print(
            f"{labels[r['mode']]:<28}{r['cells']:>6}{r['wall']:>9.1f}{per_min:>10.2f}"
            f"{r['own']:>15.1f}{cols}{r['load']:>6.1f}"
        )
    by = {r["mode"]: r for r in rows}
    if "workers" in by and "workers-exec" in by:
        fork, exe = by["workers"], by["workers-exec"]
        print(
            f"\n2 x 1 workers: forked {fork['wall']:.1f} s, exec {exe['wall']:.1f} s "
            f"({exe['wall'] / fork['wall']:.2f}x; {(exe['wall'] - fork['wall']) / fork['cells']:+.1f}"
            " s a cell of wall time)"
        )
    if not {"in-process", "per-cell", "workers"} <= by.keys():
        return
    inp, per, wrk = by["in-process"], by["per-cell"], by["workers"]
    pct = 100 * (inp["wall"] - inp["own"]) / inp["own"]
    print(
        f"\nin-process overhead {pct:.1f}% of train+score (goal <= 5%): "
        f"{'ok' if pct <= 5 else 'MISSED'}"
    )
    extra = ((per["wall"] - per["own"]) - (inp["wall"] - inp["own"])) / per["cells"]
    print(
        f"one process per cell: {100 * (per['wall'] - per['own']) / per['own']:.1f}% overhead, "
        f"{extra:+.1f} s per cell over in-process"
    )
    ratio = (wrk["cells"] / wrk["wall"]) / (inp["cells"] / inp["wall"])
    print(f"2 x 1 threads: {ratio:.2f}x the throughput of 1 x {threads}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--base",
        type=Path,
        default=REPO / "runs" / "bench" / "grid" / "vanilla_xs",
        help="a micro base (pretrained here when it holds no DONE)",
    )
    p.add_argument(
        "--corpus",
        type=Path,
        default=REPO / "data" / "generated" / "micro",
        help="the generated micro corpus (built here when missing)",
    )
    p.add_argument("--threads", type=int, default=2, help="threads of the 1 x T runs (cores)")
    p.add_argument("--quick", action="store_true", help="2 cells instead of 4")
    p.add_argument(
        "--modes",
        type=lambda v: [m for m in v.split(",") if m],
        default=list(MODES),
        help=f"comma-separated, of {', '.join(MODES)} (default: all)",
    )
    p.add_argument("--work", type=Path, default=None, help="keep the studies here (default: tmp)")
    a = p.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="bench_grid_"))
    work.mkdir(parents=True, exist_ok=True)
    params = ensure_inputs(a.base.resolve(), a.corpus.resolve(), work)
    grid = write_grid(work / "grid.yaml", a.base, a.corpus, params, a.quick)
    rows = [run_mode(m, grid, work, a.threads) for m in a.modes]
    report(rows, a.threads)
    if a.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
