"""SIGKILL the study runner at random moments, rerun it, and check nothing is lost or repeated.

    python bench/grid_crash.py [--kills 20] [--seed 0] [--max-parallel 1] [--work DIR]

A tiny study (a random 2-layer base, the fixture DoIT download, the micro SFT recipe; three
cells: the untuned base n = 0, n = 1 and n = 1 without math; two epochs, both scored) is first
run without interruption: its wall time T, the moment S its first cell started (the runner's
imports before that are no work to interrupt) and its tables are the reference. Then,
``--kills`` times, a fresh study folder (and tokenised-data cache) is planned from the same
grid, ``python -m doit.grid run STUDY`` starts in its own process group and the whole group
gets SIGKILL at a moment drawn uniformly from (S, T) (seeded); what the kill left is printed
(results / items shards, temporary files, the cell it hit: checkpoints or DONE, scored splits),
then the same command reruns to completion. The final shards, read raw (``read_results``
refuses repeated keys), are compared with the reference: lost rows (reference keys missing),
duplicated rows (repeated keys), extra rows and rows whose score (per item: ``correct``)
differs. Exits 1 if any row was lost or duplicated. About 9 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "doit_download"
SFT = REPO / "recipes" / "configs" / "sft" / "micro" / "full.yaml"
sys.path.insert(0, str(REPO))  # doit from this checkout

from doit.grid import read_results  # noqa: E402
from doit.grid.plan import read_plan, write_plan  # noqa: E402
from doit.grid.results import ITEM_KEY, ITEMS_DIR, KEY, RESULTS_DIR  # noqa: E402
from doit.grid.spec import load_grid  # noqa: E402


def tiny_grid(work: Path) -> Path:
    """The grid tests' three-cell grid (doit.testing.tiny_grid) on their tiny base: a byte-level
    BPE of 384 tokens on the fixture DoIT download's files and a random 2-layer Llama."""
    from doit.testing import byte_bpe, file_texts, save_tiny_base, write_grid
    from doit.testing import tiny_grid as three_cells

    base = save_tiny_base(work / "base", byte_bpe(file_texts(FIXTURE), 384))
    return write_grid(work / "grid.yaml", three_cells(base, FIXTURE, SFT))


def start(study: Path, cache: Path, max_parallel: int) -> subprocess.Popen:
    """``python -m doit.grid run STUDY`` in a process group of its own (workers included),
    its output appended to ``STUDY.log``."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "DOIT_CACHE": str(cache)}
    cmd = [
        sys.executable,
        "-m",
        "doit.grid",
        "run",
        str(study),
        "--max-parallel",
        str(max_parallel),
        "--threads",
        "1",
    ]
    with study.with_suffix(".log").open("a", encoding="utf-8") as log:
        return subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def finish(study: Path, cache: Path, max_parallel: int) -> tuple[float, float]:
    """Run the study to completion; returns (seconds until a first cell started, wall seconds)."""
    started, first = time.perf_counter(), None
    proc = start(study, cache, max_parallel)
    while proc.poll() is None:
        if first is None and list((study / "cells").glob("*/status.json")):
            first = time.perf_counter() - started
        time.sleep(0.05)
    if proc.returncode:
        sys.exit(f"doit.grid run {study} failed; its output: {study.with_suffix('.log')}")
    took = time.perf_counter() - started
    return (took if first is None else first), took


def fresh(grid: Path, work: Path, name: str) -> tuple[Path, Path]:
    study, cache = work / name, work / f"cache-{name}"
    for path in (study, cache):
        shutil.rmtree(path, ignore_errors=True)
    study.with_suffix(".log").unlink(missing_ok=True)
    write_plan(load_grid(grid), study)
    return study, cache


def left_behind(study: Path) -> str:
    """What a kill left: shards, temporary files, and the progress of the cell it hit."""
    cells = read_plan(study).cells
    shards = [len(list((study / d).glob("*.parquet"))) for d in (RESULTS_DIR, ITEMS_DIR)]
    tmp = len(list(study.rglob("*.tmp"))) + len(list(study.rglob("*.tmp.*")))
    hit = [
        c.id
        for c in cells
        if '"running"' in _text(study / "cells" / c.id / "status.json")
        and not (study / RESULTS_DIR / f"{c.id}.parquet").is_file()
    ]
    where = "; ".join(f"{cid.split('-')[1]}: {_progress(study / 'cells' / cid)}" for cid in hit)
    return (
        f"results {shards[0]}/{len(cells)} items {shards[1]}/{len(cells)} tmp {tmp}"
        f" | {where or 'no cell running'}"
    )


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def _progress(folder: Path) -> str:
    run = folder / "run"
    ckpts = len(list(run.glob("checkpoint-*"))) if run.is_dir() else 0
    scores = len(list((folder / "eval").rglob("*.scores.json")))
    if not run.is_dir():  # the untuned base (evaluation only), or training not started
        return f"{scores} split(s) scored"
    trained = "trained" if (run / "DONE").is_file() else f"{ckpts} ckpt"
    return f"{trained}, {scores} split(s) scored"


def kill_once(grid: Path, work: Path, at: float, max_parallel: int) -> tuple[str, Path]:
    """Start a fresh study, SIGKILL its runner's group ``at`` seconds in, then rerun it."""
    study, cache = fresh(grid, work, "crash")
    proc = start(study, cache, max_parallel)
    try:
        proc.wait(timeout=at)
        state = f"missed: the run had ended (exit {proc.returncode})"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        state = left_behind(study)
    finish(study, cache, max_parallel)
    return state, study


def raw(study: Path, per_item: bool) -> pd.DataFrame:
    """Every shard's rows as written (no validation, no deduplication)."""
    folder = study / (ITEMS_DIR if per_item else RESULTS_DIR)
    parts = [pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))]
    return pd.concat(parts, ignore_index=True)


def compare(want: pd.DataFrame, got: pd.DataFrame, key: list[str], value: str) -> dict:
    """Lost, duplicated, extra and differing rows of ``got`` against ``want``."""
    got = got.astype({k: want[k].dtype for k in key + [value]})
    dup = int(got.duplicated(key).sum())
    cols = key + [value]
    merged = want[cols].merge(
        got.drop_duplicates(key)[cols], on=key, how="outer", suffixes=("_w", "_g"), indicator=True
    )
    both = merged[merged["_merge"] == "both"]
    a, b = both[f"{value}_w"].astype("Float64"), both[f"{value}_g"].astype("Float64")
    differ = ((a - b).abs().fillna(0) > 1e-9) | (a.isna() != b.isna())
    return {
        "lost": int((merged["_merge"] == "left_only").sum()),
        "dup": dup,
        "extra": int((merged["_merge"] == "right_only").sum()),
        "differ": int(differ.sum()),
    }


def check(reference: Path, study: Path) -> dict:
    """Row counts of the study's tables against the reference's (results and per-item summed)."""
    rows = compare(read_results(reference), raw(study, False), list(KEY), "score")
    items = compare(
        read_results(reference, per_item=True), raw(study, True), list(ITEM_KEY), "correct"
    )
    return {k: rows[k] + items[k] for k in rows} | {"items_differ": items["differ"]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--seed", type=int, default=0, help="seed of the kill moments")
    p.add_argument("--max-parallel", type=int, default=1, help="the runner's worker processes")
    p.add_argument("--work", type=Path, default=None, help="keep the studies here (default: tmp)")
    a = p.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="bench_grid_crash_"))
    work.mkdir(parents=True, exist_ok=True)
    grid = tiny_grid(work)
    reference, cache = fresh(grid, work, "reference")
    first, took = finish(reference, cache, a.max_parallel)
    print(
        f"uninterrupted run: {took:.1f} s ({first:.1f} s start-up before a first cell), "
        f"{len(read_results(reference))} rows, {len(read_results(reference, per_item=True))} "
        f"per-item rows; {a.kills} kills uniform over ({first:.1f}, {took:.1f}) s, "
        f"about {a.kills * 1.5 * took / 60:.0f} min",
        flush=True,
    )
    rng, total, missed = random.Random(a.seed), {}, 0
    for i in range(a.kills):
        at = rng.uniform(first, took)
        state, study = kill_once(grid, work, at, a.max_parallel)
        missed += state.startswith("missed")
        counts = check(reference, study)
        total = {k: total.get(k, 0) + v for k, v in counts.items()}
        print(
            f"kill {i + 1:>2} at {at:5.1f} s: {state}  -> lost {counts['lost']} dup "
            f"{counts['dup']} differ {counts['differ']}",
            flush=True,
        )
    print(
        f"{a.kills} kills ({a.kills - missed} during the run): {total['lost']} lost, "
        f"{total['dup']} duplicated, {total['differ']} differing rows "
        f"({total['items_differ']} of them per-item), {total['extra']} extra"
    )
    if a.work is None:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if total["lost"] or total["dup"] else 0)


if __name__ == "__main__":
    main()
