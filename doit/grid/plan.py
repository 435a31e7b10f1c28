"""A grid expanded into cells, each with a stable id, written into a study folder.

```
STUDY/
  plan.json                 {"grid": the grid's mapping, "grid_path", "cells": [Cell, ...]}
  cells/<id>/cell.json      the cell (`Cell`); sft cells also sft.yaml, the resolved recipe config
  cells/<id>/run/           sft cells: the training run (doit.train.rundir)
  cells/<id>/eval/          predictions and scores of each scored checkpoint
  cells/<id>/status.json    the runner's last word on the cell (running / failed + error)
  results/<id>.parquet, items/<id>.parquet    a scored cell's rows (doit.grid.results)
  pretraining/<id>.parquet  a pretraining cell's row (doit.grid.pretraining)
  results.csv, pretraining.csv                the gathered tables, for people
```

`read_plan(study) -> Plan` reads plan.json back, checked: the grid as a `Grid`, the cells as
`Cell`s (plan.json files written before cells were dataclasses read the same). A cell's id is
``<base>-<data>[-<formulation>]-s<seed>[-d<sample_seed>]-<hash>``
(``pretrain-<base>[-s<seed>]-<hash>`` for a pretraining cell): the hash covers what determines
the result (the base's identity, the corpus as written in the grid, the data draw, the resolved
training keys, the formulation and the evaluation settings), never execution details
(launcher, threads, backend, absolute paths, logging). The default formulation, letter, is
in neither the label nor the hash, and neither are absent ``eval_formulations``: ids planned
before formulations existed stay valid.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from doit.data import abilities as ab
from doit.data import kinds as ak
from doit.grid.spec import Axis, Base, Grid, GridError, parse_grid
from doit.io import OutputKind, check_output, inside, read_json, read_yaml, write_json
from doit.train import rundir

PLAN = "plan.json"
NO_CHECK = "no_check"  # plan.json of `plan --no-check`: a power table, no cells
BASE_IDENTITY = rundir.BASE_IDENTITY  # written beside a base the runner pretrained: what built it
CELLS = "cells"
KINDS = ("pretrain", "base", "sft")


class PlanError(ValueError):
    """A grid that cannot be planned (a base missing, a study folder planned from another grid)."""


@dataclass(frozen=True)
class Cell:
    """One planned unit of work: ``cells/<id>/cell.json`` and an entry of plan.json's cells.
    Fields a kind does not use stay at their defaults."""

    id: str  # stable (the module docstring): the folder name and the results' `cell` column
    kind: str  # pretrain: builds a base; base: the untuned base (n = 0), scored; sft: trains too
    base: str  # the base's name in the grid
    arch: str  # the base's architecture as the grid declares it
    needs: str | None = None  # the pretraining cell that must finish first
    # base and sft cells
    construction: str | None = None  # curated | synthetic | mix | base (n = 0)
    n_per_ability: int | None = None  # n of a uniform or leave-one-out cell; 0 for base cells
    excluded_ability: str | None = None  # the left-out ability of a leave-one-out cell
    synthetic: int | None = None  # synthetic items of a synthetic cell
    mix: str | None = None  # the mix file's stem (mix cells)
    seed: int | None = None  # training seed; pretrain cells: the pretrain_seed, if the grid has one
    sample_seed: int | None = None  # data-draw seed
    sweep: dict = field(default_factory=dict)  # the swept recipe keys' values
    formulation: str = ak.LETTER  # how it trains and is scored (the untuned base: scored)
    n_total: int | None = None  # training items (0 for base cells; None when unknown: mixes)
    est_steps: int | None = None  # optimiser steps the recipe's schedule gives
    est_s: float | None = None  # est_steps x the base's s_per_step
    recipe: dict | None = None  # sft: the resolved recipe config (sft.yaml less output_dir)
    # pretrain cells
    path: str | None = None  # the base's directory (absolute)
    identity: dict | None = None  # `base_identity`: what doit_base.json records once built
    config: str | None = None  # the pretraining config (absolute)
    overrides: dict | None = None  # flat pretraining keys over the config's

    @classmethod
    def from_dict(cls, d: dict, source) -> Cell:
        """A cell as plan.json or cell.json holds it; errors name ``source``."""
        names = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(d, dict) or any(
            not isinstance(d.get(k), str) for k in ("id", "kind", "base", "arch")
        ):
            raise PlanError(f"{source}: a cell needs id, kind, base and arch; got {d!r:.200}")
        unknown = sorted(set(d) - names)
        if unknown or d["kind"] not in KINDS:
            what = f"unknown key(s) {', '.join(unknown)}" if unknown else f"kind {d['kind']!r}"
            raise PlanError(f"{source}: cell {d['id']}: {what} (kinds: {', '.join(KINDS)})")
        return cls(**d)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Plan:
    """A planned study (`read_plan`): its grid and its cells, in run order."""

    grid: Grid
    cells: tuple[Cell, ...]

    def cell(self, cell_id: str) -> Cell:
        return next(c for c in self.cells if c.id == cell_id)

    def kinds(self) -> set[str]:
        return {c.kind for c in self.cells}


def digest(obj) -> str:
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _yaml(path) -> dict:
    return read_yaml(path) or {}


def base_identity(base: Base) -> dict:
    """What built a base: its name, arch, chat format and merged pretraining config (the
    config file less output_dir, then the overrides)."""
    pretrain = None
    if base.pretrain:
        config = {k: v for k, v in _yaml(base.pretrain.config).items() if k != "output_dir"}
        pretrain = {**config, **base.pretrain.overrides}
    return {
        "name": base.name,
        "arch": base.arch,
        "chat_format": base.chat_format,
        "pretrain": pretrain,
    }


def recipe(
    grid: Grid,
    sweep: dict,
    data: dict,
    seed: int,
    sample_seed: int,
    base: Base,
    formulation: str = ak.LETTER,
) -> dict:
    """The cell's resolved recipe config (what sft.yaml holds, output_dir aside); the
    formulation is the grid's key (set only when not letter, the recipe's default)."""
    cfg = {**_yaml(base.sft_config or grid.sft.config), **grid.sft.overrides, **sweep}
    if "formulation" in cfg:
        raise PlanError(
            f"{grid.path}: sft: formulation is a grid key (`formulation:`), not a "
            "recipe key: it decides how cells are scored too"
        )
    if formulation != ak.LETTER:
        cfg["formulation"] = formulation
    for key in ("per_ability", "mix", "subset_dir", "synthetic", "exclude_abilities"):
        cfg[key] = None
    cfg.update(
        data,
        seed=seed,
        sample_seed=sample_seed,
        chat_format=base.chat_format,
        doit_dir=str(Path(grid.doit_dir).resolve()),
        model_name_or_path=str(base.resolved),
    )
    if cfg.get("deepspeed"):
        cfg["deepspeed"] = str(Path(cfg["deepspeed"]).resolve())
    return cfg


def data_points(grid: Grid, base: Base, written=((), {})) -> list[tuple[str, dict, dict]]:
    """(label, recipe data keys, cell fields) of every data cell of ``base``; ``written``: the
    mix files the plan wrote (`written_mixes`): (name, path) of each random mixture, and each
    staged mix's copies at the replay axis's counts."""
    random, replays = written

    def applies(axis: str) -> tuple:
        a = grid.data.get(axis)
        return a.values if a and (a.bases is None or base.name in a.bases) else ()

    loo = grid.data.get("loo")
    left_out = (loo.abilities if loo else None) or ab.ABILITY_KEYS
    out = []
    for n in applies("per_ability"):
        out.append(
            (f"n{n:04d}", {"per_ability": n}, {"construction": "curated", "n_per_ability": n})
        )
    for n in applies("loo"):
        for key in left_out:
            out.append(
                (
                    f"n{n:04d}-no_{key}",
                    {"per_ability": n, "exclude_abilities": [key]},
                    {"construction": "curated", "n_per_ability": n, "excluded_ability": key},
                )
            )
    for total in applies("synthetic"):
        out.append(
            (
                f"syn{total:05d}",
                {"synthetic": total},
                {"construction": "synthetic", "synthetic": total},
            )
        )
    mixes = [(Path(p).stem, p) for p in applies("mix")]
    mixes = [copy for _, p in mixes for copy in replays[p]] if replays else mixes
    rm = grid.data.get("random_mixes")
    mixes += random if rm and (rm.bases is None or base.name in rm.bases) else ()
    for name, path in mixes:
        out.append(
            (
                f"mix_{name}",
                {"mix": str(Path(path).resolve())},
                {"construction": "mix", "mix": name},
            )
        )
    return out


def eval_identity(grid: Grid) -> dict:
    out = {
        "max_new_tokens": grid.max_new_tokens,
        "eval_epochs": grid.eval_epochs,
        "benchmarks": [(b.name, b.shots) for b in grid.benchmarks],
    }
    if grid.eval_formulations:  # absent from ids planned before formulations
        out["eval_formulations"] = sorted(grid.eval_formulations)
    if grid.held_out_items is not None:  # absent (all items) from ids planned before the key
        out["held_out_items"] = grid.held_out_items
    return out


def tag(formulation: str) -> str:
    """The id label's formulation part: nothing for letter (the default), else ``-<name>``."""
    return "" if formulation == ak.LETTER else f"-{formulation}"


def _cell(base: Base, label: str, seed: int, sample_seed: int, identity: dict, **fields) -> Cell:
    sampled = f"-d{sample_seed}" if sample_seed else ""
    cid = f"{base.name}-{label}-s{seed}{sampled}-{digest(identity)}"
    return Cell(
        id=cid, base=base.name, arch=base.arch, seed=seed, sample_seed=sample_seed, **fields
    )


def pretrain_cell(base: Base) -> Cell:
    ident = base_identity(base)
    seed = "" if base.seed is None else f"-s{base.seed}"
    return Cell(
        id=f"pretrain-{base.name}{seed}-{digest(ident)}",
        kind="pretrain",
        base=base.name,
        arch=base.arch,
        seed=base.seed,
        path=str(base.resolved),
        identity=ident,
        config=str(Path(base.pretrain.config).resolve()),
        overrides=base.pretrain.overrides,
    )


def expand(grid: Grid, study=None) -> list[Cell]:
    """Every cell of ``grid``: pretraining of missing bases, n = 0 cells, then the data cells;
    a pretraining-only grid: a pretraining cell for every base (and pretrain_seed). A grid
    with ``random_mixes`` writes their mix files into ``study`` (`random_mix_files`)."""
    if grid.pretraining_only:
        return pretraining_cells(grid)
    from doit.train.sft.args import training_identity  # the recipe's owner (imports torch)

    written = written_mixes(grid, study)
    cells = []
    sweeps = [dict(zip(grid.sweep, values)) for values in itertools.product(*grid.sweep.values())]
    for base in grid.bases:
        needs = None
        if not (base.resolved / "config.json").is_file():
            if not base.pretrain:
                raise PlanError(missing_base(grid, base))
            cells.append(pretrain_cell(base))
            needs = cells[-1].id
        else:
            check_built_as_declared(grid, base)
        bid = base_identity(base)
        base_seeds = grid.seeds if grid.base_seeds is None else grid.base_seeds
        for formulation, seed in itertools.product(grid.formulations, base_seeds):
            ident = {
                "kind": "base",
                "base": bid,
                "doit_dir": grid.doit_dir,
                "seed": seed,
                "eval": eval_identity(grid),
            }
            if formulation != ak.LETTER:
                ident["formulation"] = formulation
            cells.append(
                _cell(
                    base,
                    "n0000" + tag(formulation),
                    seed,
                    0,
                    ident,
                    kind="base",
                    needs=needs,
                    construction="base",
                    n_per_ability=0,
                    n_total=0,
                    est_steps=0,
                    formulation=formulation,
                )
            )
        for (label, data, fields), sweep, formulation, seed, sample_seed in itertools.product(
            data_points(grid, base, written),
            sweeps,
            grid.formulations,
            grid.seeds,
            grid.sample_seeds,
        ):
            cfg = recipe(grid, sweep, data, seed, sample_seed, base, formulation)
            ident = {
                "kind": "sft",
                "base": bid,
                "doit_dir": grid.doit_dir,
                "training": training_identity(cfg),
                "eval": eval_identity(grid),
            }
            swept = "".join(f"-{k}{v}" for k, v in sweep.items())
            cells.append(
                _cell(
                    base,
                    label + swept + tag(formulation),
                    seed,
                    sample_seed,
                    ident,
                    kind="sft",
                    needs=needs,
                    sweep=sweep,
                    recipe=cfg,
                    formulation=formulation,
                    **fields,
                    **estimate(grid, cfg, fields, base),
                )
            )
    return cells


def written_mixes(grid: Grid, study) -> tuple[list[tuple[str, Path]], dict]:
    """The mix files the plan writes into ``STUDY/mixes/``: (name, path) of each random
    mixture (`random_mix_files`), and each staged mix path's copies at the replay axis's
    counts (`doit.grid.replay`; {} without the axis)."""
    replay = grid.data.get("replay")
    if replay is None:
        return random_mix_files(grid, study), {}
    from doit.grid.replay import write_replayed

    _needs_study(grid, study, "data.replay")
    return random_mix_files(grid, study), write_replayed(
        grid.data["mix"].values, replay.values, study
    )


def _needs_study(grid: Grid, study, key: str) -> None:
    if study is None:
        raise PlanError(
            f"{grid.path}: {key}: its mix files are written into the "
            "study folder: plan it with python -m doit.grid plan GRID --out STUDY"
        )


def random_mix_files(grid: Grid, study) -> list[tuple[str, Path]]:
    """(name, path) of the random mixtures, written into ``STUDY/mixes/``; [] without the axis."""
    axis = grid.data.get("random_mixes")
    if axis is None:
        return []
    _needs_study(grid, study, "data.random_mixes")
    from doit.grid.random_mixes import write_mixes

    try:
        return write_mixes(axis, grid.doit_dir, study)
    except (ValueError, OSError) as e:  # a total beyond the pools, a corpus that does not load
        raise PlanError(f"{grid.path}: data.random_mixes: {e}") from None


def pretraining_cells(grid: Grid) -> list[Cell]:
    """A pretraining-only grid's cells, seed by seed: every base, built already or not."""
    seeded = [[b.at_seed(s) for b in grid.bases] for s in grid.pretrain_seeds or ()]
    cells = []
    for base in [b for bases in seeded for b in bases] or grid.bases:
        if (base.resolved / "config.json").is_file():
            check_built_as_declared(grid, base)
        cells.append(pretrain_cell(base))
    return cells


def estimate(grid: Grid, cfg: dict, fields: dict, base: Base) -> dict:
    """Training items, optimiser steps (the recipe's schedule, `planned_schedule`) and, with
    the base's ``s_per_step``, seconds."""
    from doit.train.errors import ConfigError
    from doit.train.sft.args import planned_schedule

    n = fields.get("n_per_ability")
    excluded = 1 if fields.get("excluded_ability") else 0
    total = n * (len(ab.ABILITY_KEYS) - excluded) if n else fields.get("synthetic")
    if total is None:  # a mix: its size depends on the pools; shown as unknown
        return {"n_total": None, "est_steps": None, "est_s": None}
    try:
        steps = planned_schedule(cfg, total, grid.gpus * grid.nodes)["max_steps"]
    except ConfigError as e:
        raise PlanError(f"{grid.path}: sft: {base.name}'s recipe: {e}") from None
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
            raise PlanError(
                f"{grid.path}: bases: {base.name}: {base.resolved} was pretrained "
                f"from another config (differs in: {keys}); give this base "
                "another path or delete that directory"
            )


def missing_base(grid: Grid, base: Base) -> str:
    return (
        f"{grid.path}: bases: {base.name}: {base.resolved} holds no model (no config.json) "
        f"and the base has no pretrain block. Put a transformers checkpoint there "
        f"(from_pretrained layout), point `path` at one, or add `pretrain: {{config: "
        f"recipes/configs/pretrain/<size>.yaml, overrides: {{value_mode: <arch>}}}}` so "
        f"the runner trains it first (micro bases: `make ladder` writes "
        f"runs/ladder/<arch>_<size>/seed0)."
    )


def grid_diff(old, new, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two grid mappings."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(set(old) | set(new), key=str)
        return [d for k in keys for d in grid_diff(old.get(k), new.get(k), f"{prefix}{k}.")]
    return [] if old == new else [prefix.rstrip(".") or "(grid)"]


def read_plan(study) -> Plan:
    """``STUDY/plan.json``, checked: its grid (files it names are not looked for again) and
    its cells; an error names the file."""
    path = Path(study) / PLAN
    if not path.is_file():
        raise PlanError(
            f"{study}: no {PLAN}; plan it first: python -m doit.grid plan GRID.yaml --out {study}"
        )
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise PlanError(f"{path}: expected {{grid, grid_path, cells: [...]}}")
    try:
        grid = parse_grid(data.get("grid"), path, files=False)
    except GridError as e:
        raise PlanError(f"grid: {e}") from None
    grid = dataclasses.replace(grid, path=Path(data.get("grid_path") or path))
    return Plan(grid, tuple(Cell.from_dict(c, path) for c in data["cells"]))


STUDY = OutputKind("study", holds=lambda path: (path / PLAN).is_file(), marker=f"no {PLAN}")


def study_inputs(grid: Grid) -> dict:
    """What a study is planned from, by name: no study folder may be, or hold, any of them."""
    named = {"the grid file": grid.path, "the grid's doit_dir": grid.doit_dir}
    for i, base in enumerate(grid.bases):
        if base.pretrain is None:  # a base the study pretrains is its output, not its input
            named[f"bases[{i}].path"] = base.resolved
        if base.sft_config:
            named[f"bases[{i}].sft_config"] = base.sft_config
    if not grid.pretraining_only:
        named["sft.config"] = grid.sft.config
    for i, bench in enumerate(grid.benchmarks):
        named[f"benchmarks[{i}].data_dir"] = bench.data_dir
    mixes = grid.data.get("mix")
    for i, mix in enumerate(mixes.values if isinstance(mixes, Axis) else ()):
        named[f"data.mix[{i}]"] = mix
    return named


def write_plan(
    grid: Grid,
    study,
    replan: bool = False,
    flag: str = "--out",
    kind: OutputKind = STUDY,
    power: dict | None = None,
) -> tuple[list[Cell], list[str]]:
    """Write ``STUDY/plan.json`` and each cell's folder; returns (cells, retired cell ids).

    ``study`` is checked first (`doit.io.check_output`, named ``flag``): never one of the
    grid's inputs (`study_inputs`), a folder holding one or the current directory; an existing
    folder only when it is a study (its plan.json; the caller's ``kind`` may allow more) or
    empty.

    A study planned from another grid is refused (naming the differing keys) unless
    ``replan``: then cells whose id is unchanged keep their work, and the rows of cells the
    new plan no longer holds move to ``STUDY/retired/`` (never into the new tables). Nothing
    is written unless every cell could run (`doit.grid.checks`). ``power``: what the grid can
    decide (`doit.grid.power.plan_power`), kept in plan.json for `doit grid status`.
    """
    from doit.grid.checks import check_plan

    check_output(study, kind, inputs=study_inputs(grid), flag=flag, overwrite_flag=None)
    study = Path(study)
    with tempfile.TemporaryDirectory(prefix="doit-plan-") as tmp:  # random mixes, until checked
        cells = expand(grid, tmp)
        if not cells:
            empty = [k for k, v in _flat(grid.raw).items() if v == []]
            raise PlanError(
                f"{grid.path}: the grid plans no cells"
                + (f" (empty: {', '.join(empty)})" if empty else "")
            )
        check_plan(grid, cells)
    old = read_plan(study) if (study / PLAN).is_file() else None
    if old is not None and old.grid.raw != grid.raw and not replan:
        keys = ", ".join(grid_diff(old.grid.raw, grid.raw))
        raise PlanError(
            f"{study} was planned from another grid (differs in: {keys}); "
            "--replan keeps the cells whose id is unchanged"
        )
    if {"random_mixes", "replay"} & set(grid.data):  # the same ids: a mix's path is not part
        cells = expand(grid, study)  # of its identity
    retired = []
    if old is not None:
        keep = {c.id for c in cells}
        retired = [c.id for c in old.cells if c.id not in keep]
        for cid in retired:
            retire(study, cid)
    for cell in cells:
        folder = inside(study / CELLS, study / CELLS / cell.id)
        folder.mkdir(parents=True, exist_ok=True)
        if cell.kind == "sft":
            cfg = {**cell.recipe, "output_dir": str((folder / "run").resolve())}
            write_text(folder / "sft.yaml", yaml.safe_dump(cfg, sort_keys=False))
        write_json(folder / "cell.json", cell.to_dict())
    write_json(
        study / PLAN,
        {
            "grid": grid.raw,
            "grid_path": str(grid.path),
            "cells": [c.to_dict() for c in cells],
            "planned_from": planned_from(grid, study, cells),
            **({"power": power} if power else {}),
        },
    )
    return cells, retired


def write_unchecked_plan(grid: Grid, study, power: dict) -> None:
    """``doit grid plan --no-check``: plan.json with the grid and its power table but no cells
    (bases and corpus were not looked at), which `doit grid run` refuses to run."""
    check_output(study, STUDY, inputs=study_inputs(grid), overwrite_flag=None)
    study = Path(study)
    if (study / PLAN).is_file() and read_plan(study).cells:
        raise PlanError(f"{study}: planned with cells; plan --no-check into another folder")
    plan = {"grid": grid.raw, "grid_path": str(grid.path), "cells": [], NO_CHECK: True}
    write_json(study / PLAN, plan | {"power": power})


def unchecked(study) -> bool:
    """Whether ``study`` was planned with --no-check (nothing to run)."""
    path = Path(study) / PLAN
    return path.is_file() and bool(read_json(path).get(NO_CHECK))


def _flat(mapping: dict, prefix: str = "") -> dict:
    """{dotted key: value} of a nested mapping."""
    out = {}
    for k, v in mapping.items():
        out |= _flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v}
    return out


def planned_from(grid: Grid, study: Path, cells: list[Cell]) -> dict:
    """What a plan was made from, as hashes: the corpus's record files (`data_hash`) and
    each fine-tuning cell's sft.yaml; `check_unchanged` compares them before a run."""
    from doit.data.manifest import data_hash
    from doit.io import sha256_file

    return {
        "doit_dir": None if grid.pretraining_only else data_hash(grid.doit_dir),
        "sft_yaml": {
            c.id: sha256_file(study / CELLS / c.id / "sft.yaml") for c in cells if c.kind == "sft"
        },
    }


def check_unchanged(study) -> None:
    """Refuse to run a study whose corpus or a cell's sft.yaml changed since it was planned
    (its cells would train under ids that no longer say what they train); plan.json files
    written before plans recorded this are not checked."""
    from doit.data.manifest import data_hash
    from doit.io import sha256_file

    study = Path(study)
    recorded = read_json(study / PLAN).get("planned_from")
    if not isinstance(recorded, dict):
        return
    plan, changed = read_plan(study), []
    corpus = plan.grid.doit_dir
    if recorded.get("doit_dir"):
        if not Path(corpus).is_dir():
            changed.append(f"the corpus {corpus} (not found)")
        elif data_hash(corpus) != recorded["doit_dir"]:
            changed.append(f"the corpus {corpus}")
    for cell_id, sha in sorted(recorded.get("sft_yaml", {}).items()):
        path = inside(study / CELLS, study / CELLS / cell_id) / "sft.yaml"
        if not path.is_file() or sha256_file(path) != sha:
            changed.append(str(path))
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        raise PlanError(
            f"{study}: changed since it was planned: {', '.join(changed[:3])}{more}; plan "
            f"it again to accept (python -m doit.grid plan {plan.grid.path} --out {study})"
        )


def retire(study: Path, cell_id: str) -> None:
    """Move a cell's row shards (results, items, pretraining) to ``STUDY/retired/``."""
    from doit.grid.pretraining import PRETRAINING_DIR
    from doit.grid.results import ITEMS_DIR, RESULTS_DIR

    for table in (RESULTS_DIR, ITEMS_DIR, PRETRAINING_DIR):
        shard = inside(study / table, study / table / f"{cell_id}.parquet")
        if shard.is_file():
            dest = inside(study / "retired" / table, study / "retired" / table / shard.name)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shard.replace(dest)


def write_text(path: Path, text: str) -> None:
    from doit.io import atomic_write_text

    atomic_write_text(path, text)
