"""A grid expanded into cells, each with a stable id, written into a study folder.

```
STUDY/
  plan.json                 {"grid": the grid file's mapping, "grid_path", "cells": [cell, ...]}
  cells/<id>/cell.json      the cell (below); sft cells also sft.yaml, the resolved recipe config
  cells/<id>/run/           sft cells: the training run (doit.train.rundir)
  cells/<id>/eval/          predictions and scores of each scored checkpoint
  cells/<id>/status.json    the runner's last word on the cell (running / failed + error)
  results/<id>.parquet, items/<id>.parquet    the cell's rows (doit.grid.results)
  results.csv               the gathered table, for people
```

A cell is a dict: ``id``, ``kind`` (``pretrain``: trains a base the grid names; ``base``: the
untuned base, evaluation only, n = 0; ``sft``: fine-tune, then evaluate), ``base``, ``arch``,
``construction`` (curated | synthetic | mix | base), ``n_per_ability``, ``excluded_ability``,
``synthetic``, ``mix``, ``seed``, ``sample_seed``, ``sweep``, ``needs`` (the pretrain cell it
waits for), ``est_steps`` and ``est_s``. The id is ``<base>-<data>-s<seed>[-d<sample_seed>]-
<hash>``: the hash covers what determines the result (the base's identity, the corpus as
written in the grid, the data draw, the resolved training keys, the evaluation settings),
never execution details (launcher, threads, backend, absolute paths, logging).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from pathlib import Path

import yaml

from doit.data import abilities as ab
from doit.grid.spec import Base, Grid
from doit.io import read_json, write_json

PLAN = "plan.json"
BASE_IDENTITY = "doit_base.json"  # written beside a base the runner pretrained: what built it
CELLS = "cells"
# Recipe keys that change how a cell runs, not what it learns: left out of the id.
EXECUTION_KEYS = ("output_dir", "run_name", "model_name_or_path", "doit_dir", "mix", "deepspeed",
                  "report_to", "logging_steps", "disable_tqdm", "dataloader_num_workers",
                  "dataloader_pin_memory", "per_device_eval_batch_size")  # fmt: skip


class PlanError(ValueError):
    """A grid that cannot be planned (a base missing, a study folder planned from another grid)."""


def digest(obj) -> str:
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _yaml(path) -> dict:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}


def base_identity(base: Base) -> dict:
    pretrain = None
    if base.pretrain:
        config = {k: v for k, v in _yaml(base.pretrain["config"]).items() if k != "output_dir"}
        pretrain = {**config, **base.pretrain["overrides"]}
    return {"name": base.name, "arch": base.arch, "chat_format": base.chat_format,
            "pretrain": pretrain}  # fmt: skip


def recipe(grid: Grid, sweep: dict, data: dict, seed: int, sample_seed: int, base: Base) -> dict:
    """The cell's resolved recipe config (what sft.yaml holds, output_dir aside)."""
    cfg = {**_yaml(base.sft_config or grid.sft["config"]), **grid.sft["overrides"], **sweep}
    for key in ("per_ability", "mix", "subset_dir", "synthetic", "exclude_abilities"):
        cfg[key] = None
    cfg.update(data, seed=seed, sample_seed=sample_seed, chat_format=base.chat_format,
               doit_dir=str(Path(grid.doit_dir).resolve()),
               model_name_or_path=str(base.resolved))  # fmt: skip
    if cfg.get("deepspeed"):
        cfg["deepspeed"] = str(Path(cfg["deepspeed"]).resolve())
    return cfg


def training_identity(cfg: dict) -> dict:
    out = {k: v for k, v in cfg.items() if k not in EXECUTION_KEYS}
    if cfg.get("global_batch_size"):  # then the per-device size only splits the same batch
        out.pop("per_device_train_batch_size", None)
    if cfg.get("mix"):
        out["mix_content"] = _yaml(cfg["mix"])
    return out


def data_points(grid: Grid, base: Base) -> list[tuple[str, dict, dict]]:
    """(label, recipe data keys, cell fields) of every data cell of ``base``."""

    def applies(axis: str) -> list:
        a = grid.data.get(axis)
        return a.values if a and (a.bases is None or base.name in a.bases) else []

    loo = grid.data.get("loo")
    left_out = (loo.abilities if loo else None) or ab.ABILITY_KEYS
    out = []
    for n in applies("per_ability"):
        out.append((f"n{n:04d}", {"per_ability": n},
                    {"construction": "curated", "n_per_ability": n}))  # fmt: skip
    for n in applies("loo"):
        for key in left_out:
            out.append((f"n{n:04d}-no_{key}", {"per_ability": n, "exclude_abilities": [key]},
                        {"construction": "curated", "n_per_ability": n,
                         "excluded_ability": key}))  # fmt: skip
    for total in applies("synthetic"):
        out.append((f"syn{total:05d}", {"synthetic": total},
                    {"construction": "synthetic", "synthetic": total}))  # fmt: skip
    for path in applies("mix"):
        name = Path(path).stem
        out.append((f"mix_{name}", {"mix": str(Path(path).resolve())},
                    {"construction": "mix", "mix": name}))  # fmt: skip
    return out


def eval_identity(grid: Grid) -> dict:
    return {"max_new_tokens": grid.max_new_tokens, "eval_epochs": grid.eval_epochs,
            "benchmarks": [(b["name"], b["shots"]) for b in grid.benchmarks]}  # fmt: skip


def _cell(base: Base, label: str, seed: int, sample_seed: int, identity: dict, **fields) -> dict:
    sampled = f"-d{sample_seed}" if sample_seed else ""
    cid = f"{base.name}-{label}-s{seed}{sampled}-{digest(identity)}"
    fields.setdefault("construction", "base")
    fields.setdefault("n_per_ability", 0 if fields["construction"] == "base" else None)
    return {"id": cid, "base": base.name, "arch": base.arch, "seed": seed,
            "sample_seed": sample_seed, "excluded_ability": None, "synthetic": None,
            "mix": None, "sweep": {}, "needs": None, **fields}  # fmt: skip


def pretrain_cell(base: Base) -> dict:
    ident = base_identity(base)
    return {"id": f"pretrain-{base.name}-{digest(ident)}", "kind": "pretrain",
            "base": base.name, "arch": base.arch, "path": str(base.resolved), "identity": ident,
            "config": str(Path(base.pretrain["config"]).resolve()),
            "overrides": base.pretrain["overrides"], "needs": None}  # fmt: skip


def expand(grid: Grid) -> list[dict]:
    """Every cell of ``grid``: pretraining of missing bases, n = 0 cells, then the data cells."""
    cells = []
    sweeps = [dict(zip(grid.sweep, values)) for values in itertools.product(*grid.sweep.values())]
    for base in grid.bases:
        needs = None
        if not (base.resolved / "config.json").is_file():
            if not base.pretrain:
                raise PlanError(missing_base(grid, base))
            cells.append(pretrain_cell(base))
            needs = cells[-1]["id"]
        else:
            check_built_as_declared(grid, base)
        bid = base_identity(base)
        for seed in grid.seeds:
            ident = {"kind": "base", "base": bid, "doit_dir": grid.doit_dir, "seed": seed,
                     "eval": eval_identity(grid)}  # fmt: skip
            cells.append(_cell(base, "n0000", seed, 0, ident, kind="base", needs=needs,
                               n_total=0, est_steps=0))  # fmt: skip
        for (label, data, fields), sweep, seed, sample_seed in itertools.product(
            data_points(grid, base), sweeps, grid.seeds, grid.sample_seeds
        ):
            cfg = recipe(grid, sweep, data, seed, sample_seed, base)
            ident = {"kind": "sft", "base": bid, "doit_dir": grid.doit_dir,
                     "training": training_identity(cfg), "eval": eval_identity(grid)}  # fmt: skip
            tag = "".join(f"-{k}{v}" for k, v in sweep.items())
            cells.append(_cell(base, label + tag, seed, sample_seed, ident, kind="sft",
                               needs=needs, sweep=sweep, recipe=cfg, **fields,
                               **estimate(cfg, fields, base)))  # fmt: skip
    return cells


def estimate(cfg: dict, fields: dict, base: Base) -> dict:
    """Training items, optimiser steps and (with the base's ``s_per_step``) seconds."""
    n = fields.get("n_per_ability")
    excluded = 1 if fields.get("excluded_ability") else 0
    total = n * (len(ab.ABILITY_KEYS) - excluded) if n else fields.get("synthetic")
    if total is None:  # a mix: its size depends on the pools; shown as unknown
        return {"n_total": None, "est_steps": None, "est_s": None}
    batch = cfg.get("global_batch_size") or cfg.get("per_device_train_batch_size", 8)
    per_epoch = math.ceil(total / batch)
    if cfg.get("schedule") == "steps":
        steps = cfg["max_steps"]
    else:
        epochs = math.ceil(per_epoch * float(cfg.get("num_train_epochs", 3))) / per_epoch
        steps = max(math.ceil(per_epoch * epochs), cfg.get("min_steps") or 0)
    est = steps * base.s_per_step if base.s_per_step else None
    return {"n_total": total, "est_steps": steps, "est_s": est}


def check_built_as_declared(grid: Grid, base: Base) -> None:
    """A base this runner pretrained must match the grid's pretrain block (same path, other
    config: an error, never a silent reuse)."""
    path = base.resolved / BASE_IDENTITY
    if base.pretrain and path.is_file():
        built = read_json(path)
        if built != json.loads(json.dumps(base_identity(base))):
            keys = ", ".join(grid_diff(built, base_identity(base))) or "?"
            raise PlanError(f"{grid.path}: bases: {base.name}: {base.resolved} was pretrained "
                            f"from another config (differs in: {keys}); give this base "
                            "another path or delete that directory")  # fmt: skip


def missing_base(grid: Grid, base: Base) -> str:
    return (f"{grid.path}: bases: {base.name}: {base.resolved} holds no model (no config.json) "
            f"and the base has no pretrain block. Put a transformers checkpoint there "
            f"(from_pretrained layout), point `path` at one, or add `pretrain: {{config: "
            f"recipes/configs/pretrain/<arch>_<size>.yaml}}` so the runner trains it first "
            f"(micro bases: `make ladder` writes runs/ladder/<arch>_<size>/seed0).")  # fmt: skip


def grid_diff(old, new, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two grid mappings."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(set(old) | set(new), key=str)
        return [d for k in keys for d in grid_diff(old.get(k), new.get(k), f"{prefix}{k}.")]
    return [] if old == new else [prefix.rstrip(".") or "(grid)"]


def read_plan(study) -> dict:
    path = Path(study) / PLAN
    if not path.is_file():
        raise PlanError(f"{study}: no {PLAN}; plan it first: python -m doit.grid plan GRID.yaml "
                        f"--out {study}")  # fmt: skip
    return read_json(path)


def write_plan(grid: Grid, study, replan: bool = False) -> tuple[list[dict], list[str]]:
    """Write ``STUDY/plan.json`` and each cell's folder; returns (cells, retired cell ids).

    A study planned from another grid is refused (naming the differing keys) unless
    ``replan``: then cells whose id is unchanged keep their work, and the results of cells
    the new plan no longer holds move to ``STUDY/retired/`` (never into the new table).
    """
    from doit.grid import results

    study = Path(study)
    cells = expand(grid)
    old = read_plan(study) if (study / PLAN).is_file() else None
    if old is not None and old["grid"] != grid.raw and not replan:
        keys = ", ".join(grid_diff(old["grid"], grid.raw))
        raise PlanError(f"{study} was planned from another grid (differs in: {keys}); "
                        "--replan keeps the cells whose id is unchanged")  # fmt: skip
    retired = []
    if old is not None:
        keep = {c["id"] for c in cells}
        retired = [c["id"] for c in old["cells"] if c["id"] not in keep]
        for cid in retired:
            for per_item in (False, True):
                shard = results.shard_path(study, cid, per_item)
                if shard.is_file():
                    dest = study / "retired" / shard.parent.name / shard.name
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shard.replace(dest)
    for cell in cells:
        folder = study / CELLS / cell["id"]
        folder.mkdir(parents=True, exist_ok=True)
        if cell["kind"] == "sft":
            cfg = {**cell["recipe"], "output_dir": str((folder / "run").resolve())}
            write_text(folder / "sft.yaml", yaml.safe_dump(cfg, sort_keys=False))
        write_json(folder / "cell.json", cell)
    write_json(study / PLAN, {"grid": grid.raw, "grid_path": str(grid.path), "cells": cells})
    return cells, retired


def write_text(path: Path, text: str) -> None:
    from doit.io import atomic_write_text

    atomic_write_text(path, text)
