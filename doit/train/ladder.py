"""The value-residual micro ladder: every (arch, size, seed) pretraining cell, finished ones skipped.

```bash
python -m doit.train.ladder --out runs/ladder --seeds 0 1 2
python -m doit.train.ladder --out runs/ladder --seeds 0 --jobs 2 --threads 1   # two cells at once
python -m doit.train.ladder --out runs/sweep --archs vanilla --sizes xs -- --learning_rate 6e-3
```

Each cell is `recipes/configs/pretrain/<arch>_<size>.yaml` trained by `doit.train.pretrain`
into ``<out>/<arch>_<size>/seed<k>/``; the default sizes are xs, s and l (m has configs too:
``--sizes xs s m l``). Flags after ``--`` override every cell's config.
Cells run seed by seed, largest first (so that ``--jobs`` workers finish together); a cell with
``DONE`` is skipped. ``<out>/ladder.jsonl`` gets one row per cell and call: arch, size, seed,
status (trained|skipped|failed), wall_s, valid_loss. ``--jobs N`` trains N cells in parallel
processes; with ``--threads 1`` each uses one core, which degrades far less than one two-thread
process when other jobs share the CPU.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

ARCHS = ("vanilla", "resformer", "svformer")
SIZES = ("xs", "s", "m", "l")  # every size with configs, smallest first
DEFAULT_SIZES = ("xs", "s", "l")  # 0.20M / 0.44M / 1.77M (8.8x): one seed in <= 20 min on 2 cores
CONFIG_DIR = "recipes/configs/pretrain"
LOG = "ladder.jsonl"


def cells(archs, sizes, seeds, config_dir, out) -> list[dict]:
    """Cells in run order: seed by seed, largest size first."""
    found = []
    for seed in seeds:
        for size in sorted(sizes, key=lambda s: -SIZES.index(s) if s in SIZES else 1):
            for arch in archs:
                config = Path(config_dir) / f"{arch}_{size}.yaml"
                if not config.is_file():
                    raise FileNotFoundError(f"no config for cell ({arch}, {size}): {config}")
                run_dir = Path(out) / f"{arch}_{size}" / f"seed{seed}"
                found.append({"arch": arch, "size": size, "seed": seed,
                              "config": str(config), "run_dir": str(run_dir)})  # fmt: skip
    return found


def run_cell(cell: dict, extra: list[str], threads: int | None) -> dict:
    """Train one cell (or skip it when DONE); returns its ladder.jsonl row."""
    import torch

    from doit.train.launch import cleanup_shm
    from doit.train.pretrain import parse_args, run
    from doit.train.rundir import is_done

    row = {k: cell[k] for k in ("arch", "size", "seed")}
    if is_done(cell["run_dir"]):
        return {**row, "status": "skipped", "wall_s": 0.0, "valid_loss": _done_loss(cell)}
    if threads:
        torch.set_num_threads(threads)
    start = time.perf_counter()
    argv = ["--config", cell["config"], "--output_dir", cell["run_dir"],
            "--seed", str(cell["seed"]), *extra]  # fmt: skip
    try:
        end = run(parse_args(argv)).final
    except Exception as e:  # one failed cell must not stop the ladder; the row says why
        logging.getLogger("doit.train.ladder").exception("cell %s failed", row)
        return {**row, "status": "failed", "error": f"{type(e).__name__}: {e}",
                "wall_s": round(time.perf_counter() - start, 1)}  # fmt: skip
    finally:
        cleanup_shm()
    return {**row, "status": "trained", "wall_s": round(time.perf_counter() - start, 1),
            "train_wall_s": end["wall_s"], "valid_loss": end["valid_loss"]}  # fmt: skip


def _done_loss(cell: dict) -> float | None:
    from doit.train.rundir import read_done

    return read_done(cell["run_dir"]).get("valid_loss")


def run_ladder(todo: list[dict], out, extra: list[str], jobs: int = 1, threads=None) -> list[dict]:
    log_path = Path(out) / LOG
    log_path.parent.mkdir(parents=True, exist_ok=True)
    rows = []

    def record(row: dict) -> None:
        rows.append(row)
        with log_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"[ladder] {json.dumps(row)}", flush=True)

    if jobs <= 1:
        for cell in todo:
            record(run_cell(cell, extra, threads))
        return rows
    with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(run_cell, cell, extra, threads) for cell in todo]
        for future in as_completed(futures):
            record(future.result())
    return rows


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(
        prog="python -m doit.train.ladder", description=__doc__.split("\n")[0]
    )
    p.add_argument("--out", default="runs/ladder", help="root of the cell run directories")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--archs", nargs="+", default=list(ARCHS))
    p.add_argument(
        "--sizes",
        nargs="+",
        default=list(DEFAULT_SIZES),
        help=f"default: {' '.join(DEFAULT_SIZES)}; adding m (0.79M) costs ~6 min a seed",
    )
    p.add_argument("--config_dir", default=CONFIG_DIR, help="holds <arch>_<size>.yaml")
    p.add_argument("--jobs", type=int, default=1, help="cells trained at once (processes)")
    p.add_argument("--threads", type=int, default=None, help="torch threads per cell")
    a = p.parse_args(argv)
    logging.basicConfig(format="%(asctime)s %(name)s: %(message)s", level=logging.INFO)
    start = time.perf_counter()
    try:
        todo = cells(a.archs, a.sizes, a.seeds, a.config_dir, a.out)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rows = run_ladder(todo, a.out, extra, a.jobs, a.threads)
    failed = [r for r in rows if r["status"] == "failed"]
    print(
        f"[ladder] {len(rows)} cells ({len(failed)} failed) in {time.perf_counter() - start:.0f} s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
