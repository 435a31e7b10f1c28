"""Running one planned cell: pretrain a base, or fine-tune, score and write the cell's rows.

`run_cell(study, cell_id)` is what every backend calls (in this process, in a subprocess
worker `python -m doit.grid run-cell`, or in a Slurm task). It is idempotent: a finished
step is read back (pretraining and fine-tuning DONE, scores files), an interrupted training
run resumes from its last checkpoint, and the cell is done once its rows exist (a scored
cell's results shard; a pretraining cell's row in the pretraining table, beside its DONE); an
evaluation that gives no rows fails the cell. Every path it writes or deletes is checked to lie
in the study's folders first (`cell_dir`, the tables' `shard_path`: `doit.io.inside`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from doit import faults
from doit.grid import evaluate, pretraining, results
from doit.grid.plan import CELLS, Cell, read_plan
from doit.grid.spec import Base, Grid
from doit.io import inside
from doit.train import rundir


class CellError(RuntimeError):
    """A cell that failed; the message is the line `status` shows."""


def cell_dir(study, cell_id: str) -> Path:
    """A cell's folder: inside ``STUDY/cells``, or OutputError (nothing is written there)."""
    return inside(Path(study) / CELLS, Path(study) / CELLS / cell_id)


def is_done(study, cell: Cell) -> bool:
    if cell.kind == "pretrain":
        return rundir.is_done(cell.path) and pretraining.shard_path(study, cell.id).is_file()
    return results.shard_path(study, cell.id).is_file()


def launch_keys(grid: Grid) -> dict:
    """The grid's launch keys, as `train` and `pretrain` take them."""
    return {"launcher": grid.launcher, "gpus": grid.gpus, "nodes": grid.nodes}


def run_cell(study, cell_id: str, launch: dict | None = None) -> None:
    """Bring one cell to done. ``launch`` overrides the grid's launch keys (launcher, gpus,
    nodes) and adds a multi-node task's ``node_rank`` and ``master_addr``."""
    plan = read_plan(study)
    cell, grid = plan.cell(cell_id), plan.grid
    launch = {**launch_keys(grid), **(launch or {})}
    if is_done(study, cell):
        return
    if cell.kind == "pretrain":
        pretrain(cell, grid, launch)
        pretraining.write_row(
            study, pretraining.row(cell.id, cell.base, rundir.read_done(cell.path))
        )
        return
    if cell.needs and not is_done(study, plan.cell(cell.needs)):
        raise CellError(f"its base is not pretrained yet (cell {cell.needs})")
    folder = cell_dir(study, cell_id)
    train_s = train(cell, folder, launch) if cell.kind == "sft" else None
    rows, items = evaluate_cell(cell, grid, folder)
    if not rows:  # never a done cell without rows: the table would lack it silently
        raise CellError(f"its evaluation gave no rows (nothing scored in {folder / 'eval'})")
    for r in rows:
        r["train_s"] = train_s
    write_rows(study, cell_id, rows, items)
    prune(study, cell, grid.keep, rows)


# --- training ------------------------------------------------------------------------------------
def pretrain(cell: Cell, grid: Grid, launch: dict) -> None:
    """Pretrain a base the grid declares (a finished one is read back) and record what built
    it (`plan.BASE_IDENTITY`; a base built before the runner recorded that is left as it is)."""
    from doit.grid.plan import BASE_IDENTITY
    from doit.io import write_json

    if rundir.is_done(cell.path):
        return
    argv = [
        "--config",
        cell.config,
        "--output_dir",
        cell.path,
        "--micro_dir",
        str(Path(grid.doit_dir).resolve()),
    ]
    for key, value in cell.overrides.items():
        argv += [f"--{key}", str(value)]
    write_json(Path(cell.path) / BASE_IDENTITY, cell.identity)  # before: a kill keeps it
    if launch["launcher"] == "inprocess":
        from doit.train import pretrain as pt

        pt.run(pt.parse_args(argv))
    else:
        _subprocess(
            [sys.executable, "-m", "doit", "pretrain", *argv], Path(cell.path).with_suffix(".log")
        )
    if not rundir.is_done(cell.path):
        raise CellError(f"pretraining ended without DONE in {cell.path}")


def train(cell: Cell, folder: Path, launch: dict) -> float:
    """Fine-tune (or read back a finished run); returns this call's wall seconds."""
    from doit.train.sft import run
    from doit.train.sft.args import parse_args

    started = time.perf_counter()  # after the imports: a process pays them once, not per cell
    config = str(folder / "sft.yaml")
    launcher = launch["launcher"]
    if launcher == "inprocess":
        run(parse_args(["--config", config]))
    else:
        keys = ("gpus", "nodes", "node_rank", "master_addr", "master_port", "hostfile")
        cmd = launch_command(launcher, config, **{k: launch[k] for k in keys if k in launch})
        _subprocess(cmd, folder / "train.log")
    if not rundir.is_done(folder / "run"):
        raise CellError(f"training ended without DONE in {folder / 'run'}")
    return round(time.perf_counter() - started, 3)


def launch_command(
    launcher: str,
    config: str,
    gpus: int = 1,
    nodes: int = 1,
    node_rank: str = "0",
    master_addr: str = "127.0.0.1",
    master_port: int = 29500,
    hostfile: str | None = None,
) -> list[str]:
    """The command that fine-tunes one cell with ``launcher``; with nodes > 1 it runs once on
    every node (deepspeed without ssh reads the nodes and their GPUs from ``hostfile``)."""
    recipe = ["-m", "doit", "sft", "--config", config]
    if launcher == "python":
        return [sys.executable, *recipe]
    if launcher == "torchrun":
        where = (
            ["--standalone"]
            if nodes == 1
            else [
                "--nnodes",
                str(nodes),
                "--node_rank",
                node_rank,
                "--rdzv_backend",
                "c10d",
                "--rdzv_endpoint",
                f"{master_addr}:{master_port}",
            ]
        )
        return ["torchrun", *where, "--nproc_per_node", str(gpus), *recipe]
    if launcher == "deepspeed":
        if nodes == 1:
            return ["deepspeed", "--num_gpus", str(gpus), "--module", *recipe[1:]]
        if not hostfile:
            raise CellError("a multi-node deepspeed cell needs a hostfile")
        return [
            "deepspeed",
            "--no_ssh",
            "--hostfile",
            hostfile,
            "--node_rank",
            node_rank,
            "--master_addr",
            master_addr,
            "--master_port",
            str(master_port),
            "--module",
            *recipe[1:],
        ]
    raise CellError(f"launcher {launcher!r} has no command (inprocess runs in this process)")


def write_hostfile(folder: Path, hosts: list[str], gpus: int) -> str:
    """``<host> slots=<gpus>`` a line: the nodes of a multi-node cell, for deepspeed."""
    from doit.io import atomic_write_text

    path = folder / "hostfile"
    atomic_write_text(path, "".join(f"{h} slots={gpus}\n" for h in hosts))
    return str(path)


def _subprocess(cmd: list[str], log: Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT).returncode
    if rc:
        lines = [x for x in log.read_text(encoding="utf-8").splitlines() if x.strip()]
        raise CellError(f"{cmd[0]} exited {rc}: {lines[-1] if lines else ''} (log: {log})")


# --- evaluation and rows -------------------------------------------------------------------------
def evaluate_cell(cell: Cell, grid: Grid, folder: Path) -> tuple[list[dict], list[dict]]:
    doit_dir = str(Path(grid.doit_dir).resolve())
    run = folder / "run"  # read once: every row and checkpoint draws on them
    info = rundir.read_run_info(run) if (run / rundir.RUN_INFO).is_file() else {}
    metrics = rundir.read_metrics(run) if (run / rundir.METRICS).is_file() else []
    base = grid.base(cell.base)
    common = cell_columns(cell, base, info)
    if cell.kind == "base":  # the untuned base, rendered as its fine-tuned cells train
        targets = [Scored(None, False, 0.0, 0, base.resolved, metrics, {})]
        kw = {"chat_format": base.chat_format, "seed": cell.seed}
    else:
        targets, kw = scored_models(run, grid.eval_epochs, info), {}
    rows, items = [], []
    formulations = evaluate.formulations_to_score(cell.formulation, grid)
    for stage, earlier, epoch, step, model_dir, logged, data in targets:
        where = evaluate.checkpoint_folder(folder, epoch, step, stage if earlier else None)
        scored = evaluate.score_model(
            model_dir, where, doit_dir, grid, **kw, formulations=formulations
        )
        at = {"stage": stage, "epoch": epoch, "step": step, **checkpoint_columns(logged, step)}
        mine = []
        for (split, formulation), scores in scored.items():
            r, i = evaluate.score_rows(split, scores, formulation)
            mine += [{**common, **at, **x} for x in r]
            items += [{"cell": cell.id, "stage": stage, "epoch": epoch, **x} for x in i]
        bench = evaluate.score_benchmarks(model_dir, where, grid.benchmarks, cell.id, **kw)
        for split, result in bench.items():
            mine += [{**common, **at, **x} for x in evaluate.benchmark_rows(split, result)]
        rows += [own_columns(r, data) for r in mine]
    return rows, items


class Scored(NamedTuple):
    """A model a cell scores and what its rows carry."""

    stage: int | None  # its stage (a staged run's), None for an ordinary run
    earlier: bool  # an earlier stage's final model (scored for forgetting)
    epoch: float
    step: int
    model_dir: Path
    metrics: list  # its run's metrics.jsonl rows
    data: dict  # its run_info.json's data: what it trained on


def scored_models(run: Path, eval_epochs, info: dict) -> list[Scored]:
    """What a trained cell scores: the checkpoints ``eval_epochs`` names (stage None; a staged
    run's: its last stage K, with the run's data summed over its stages: ``info``, its
    run_info.json), and a staged run's earlier stages' final models (``earlier``, for
    forgetting: stage k, with what that stage trained on)."""
    metrics = rundir.read_metrics(run) if (run / rundir.METRICS).is_file() else []
    earlier = evaluate.earlier_stages(run)
    last = len(earlier) + 1 if earlier else None
    own = evaluate.checkpoints_to_score(run, eval_epochs)
    out = [Scored(last, False, e, s, m, metrics, info.get("data", {})) for e, s, m in own]
    for k, epoch, step, model in earlier:
        data = rundir.read_run_info(model).get("data", {})
        out.append(Scored(k, True, epoch, step, model, rundir.read_metrics(model), data))
    return out


def cell_columns(cell: Cell, base: Base, info: dict) -> dict:
    """The columns every row of the cell shares; ``info``: its run_info.json ({} untrained)."""
    params, total = base.params, base.params_total
    if params is None or total is None:  # a pretrained base: its counts from pretraining
        end = rundir.read_done(base.resolved) or {}
        params = params or end.get("params_non_embedding")
        total = total or end.get("params_total")
    data = info.get("data", {})
    return {
        "cell": cell.id,
        "base": cell.base,
        "arch": cell.arch,
        "params": params,
        "params_total": total,
        "construction": cell.construction,
        "mix": cell.mix,
        "n_per_ability": cell.n_per_ability,
        "n_total": sum(data.get("train_counts", {}).values()) if data else 0,
        "seed": cell.seed,
        "sample_seed": cell.sample_seed,
        "excluded_ability": cell.excluded_ability,
        "cell_formulation": cell.formulation,
        "schedule": info.get("config", {}).get("run", {}).get("schedule"),
        "run_dir": str(Path(CELLS) / cell.id / "run") if data else None,
        "data_manifest_sha": data.get("train_items_sha256"),
    }


def checkpoint_columns(metrics: list[dict], step: int) -> dict:
    """tokens_total and the per-ability validation losses logged at ``step`` (metrics.jsonl)."""
    at = [r for r in metrics if r.get("step") == step]
    tokens = max((r["tokens"] for r in at if r.get("tokens") is not None), default=0.0)
    losses = {
        k[5:-5]: v
        for r in at
        if r.get("kind") == "valid"
        for k, v in r.items()
        if k.startswith("eval_") and k.endswith("_loss")
    }
    return {"tokens_total": float(tokens), "_losses": losses}


def own_columns(row: dict, info: dict) -> dict:
    """n_own, tokens_own and valid_loss: this row's ability's share of the cell's training
    (``info``: run_info.json's data section)."""
    counts, tokens = info.get("train_counts", {}), info.get("assistant_tokens", {})
    share = tokens.get(row["ability"], 0) / sum(tokens.values()) if tokens else 0.0
    losses = row.pop("_losses", {})
    return {
        **row,
        "n_own": counts.get(row["ability"], 0),
        "tokens_own": row["tokens_total"] * share,
        "valid_loss": losses.get(row["ability"]),
    }


def write_rows(study, cell_id: str, rows: list[dict], items: list[dict]) -> None:
    """The per-item shard, then the results shard (which marks the cell done)."""
    results.write_shard(study, cell_id, results.frame(items, per_item=True), per_item=True)
    faults.point("mid_results_write")
    results.write_shard(study, cell_id, results.frame(rows))


def prune(study, cell: Cell, keep: str, rows: list[dict]) -> None:
    """Checkpoint retention once the cell is scored: all | scored | best | last."""
    run = cell_dir(study, cell.id) / "run"
    if cell.kind != "sft" or keep == "all" or not run.is_dir():
        return
    scored = {int(r["step"]) for r in rows}
    if keep == "best":
        valid = pd.DataFrame([r for r in rows if r["split"] == "valid"])
        scored = {int(valid.groupby("step")["score"].mean().idxmax())} if len(valid) else set()
    stages = [rundir.stage_dir(run, k) for k, *_ in evaluate.earlier_stages(run)]
    for ckpt in rundir.checkpoints(rundir.model_dir(run)):
        step = int(ckpt.name.rsplit("-", 1)[1])
        if keep == "last" or step not in scored:
            shutil.rmtree(inside(run, ckpt), ignore_errors=True)
    for ckpt in (c for stage in stages for c in rundir.checkpoints(stage)):
        shutil.rmtree(inside(run, ckpt), ignore_errors=True)  # their final models are kept


def thread_env(threads: int | None) -> dict[str, str]:
    """Environment that caps a worker's CPU threads."""
    if not threads:
        return {}
    return {k: str(threads) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def set_threads(threads: int | None) -> None:
    if threads:
        import torch

        torch.set_num_threads(threads)
        os.environ.update(thread_env(threads))
