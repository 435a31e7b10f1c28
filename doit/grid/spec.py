"""A grid file (`recipes/grids/*.yaml`), read and checked: `load_grid(path) -> Grid`.

Every problem is a `GridError` naming the file and the key (``bases[1].pretrain.config``).
Relative paths are resolved against the current directory (where the runner is started, as
for recipe configs); the grid itself keeps them as written, so cell ids never depend on them.
The keys, their types and defaults are documented in README.md and in every shipped grid.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from doit.data import abilities as ab

LAUNCHERS = ("inprocess", "python", "torchrun", "deepspeed")
KEEP = ("all", "scored", "best", "last")
EVAL_EPOCHS = ("all", "last")
TOP_KEYS = {"name", "doit_dir", "bases", "data", "seed", "sample_seed", "sft", "sweep",
            "max_new_tokens", "launcher", "gpus", "nodes", "eval_epochs", "eval_batch_size",
            "benchmarks", "keep", "slurm"}  # fmt: skip
BASE_KEYS = {"name", "arch", "params", "params_total", "chat_format", "path", "pretrain",
             "sft_config", "s_per_step"}  # fmt: skip
DATA_KEYS = {"per_ability", "mix", "synthetic", "loo"}


class GridError(ValueError):
    """A bad grid file: the message names the file and the key."""


@dataclass
class Base:
    name: str
    arch: str
    path: str  # as written; `resolved` is absolute
    chat_format: str = "doit"
    params: int | None = None  # non-embedding; a pretrain base may leave it to pretraining
    params_total: int | None = None
    pretrain: dict | None = None  # {"config": path, "overrides": {key: value}}
    sft_config: str | None = None  # this base's recipe config instead of the grid's sft.config
    s_per_step: float | None = None  # the plan's time estimate per SFT step (seconds)

    @property
    def resolved(self) -> Path:
        return Path(self.path).resolve()


@dataclass
class Axis:
    """One data axis's values, optionally restricted to some bases (``{values, bases}``)."""

    values: list
    bases: list[str] | None = None
    abilities: list[str] | None = None  # loo only: the abilities left out in turn (default all)


@dataclass
class Grid:
    path: Path
    raw: dict  # the file's mapping, as parsed: what plan compares on --replan
    name: str
    doit_dir: str
    bases: list[Base]
    data: dict[str, Axis]
    seeds: list[int]
    sample_seeds: list[int]
    sft: dict  # {"config": path, "overrides": {...}}
    sweep: dict[str, list]
    max_new_tokens: dict[str, int]
    launcher: str = "inprocess"
    gpus: int = 1
    nodes: int = 1
    eval_epochs: str | list[int] = "last"
    eval_batch_size: int = 16
    benchmarks: list[dict] = field(default_factory=list)
    keep: str = "last"
    slurm: dict = field(default_factory=dict)


def _fail(path: Path, key: str, message: str):
    raise GridError(f"{path}: {key}: {message}")


def _ints(path: Path, key: str, value, minimum: int = 0) -> list[int]:
    values = value if isinstance(value, list) else [value]
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            _fail(path, key, f"expected integers >= {minimum}, got {v!r}")
    if len(set(values)) != len(values):
        _fail(path, key, f"repeats a value: {values}")
    return values


def _mapping(path: Path, key: str, value, allowed: set[str] | None = None) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        _fail(path, key, f"expected a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - allowed) if allowed else []
    if unknown:
        _fail(path, f"{key}.{unknown[0]}" if key else unknown[0],
              f"unknown key; expected one of {', '.join(sorted(allowed))}")  # fmt: skip
    return value


def _file(path: Path, key: str, value) -> str:
    if not isinstance(value, str) or not Path(value).is_file():
        _fail(path, key, f"{value!r} is not a file (paths are relative to the current directory)")
    return value


def _base(path: Path, i: int, raw) -> Base:
    key = f"bases[{i}]"
    raw = _mapping(path, key, raw, BASE_KEYS)
    for k in ("name", "arch", "path"):
        if not isinstance(raw.get(k), str) or not raw[k]:
            _fail(path, f"{key}.{k}", "required (a non-empty string)")
    pretrain = raw.get("pretrain")
    if pretrain is not None:
        pretrain = _mapping(path, f"{key}.pretrain", pretrain, {"config", "overrides"})
        _file(path, f"{key}.pretrain.config", pretrain.get("config"))
        pretrain = {"config": pretrain["config"],
                    "overrides": _mapping(path, f"{key}.pretrain.overrides",
                                          pretrain.get("overrides"))}  # fmt: skip
    for k in ("params", "params_total"):
        if raw.get(k) is not None:
            _ints(path, f"{key}.{k}", raw[k], minimum=1)
    if raw.get("params") is None and pretrain is None:
        _fail(path, f"{key}.params", "required for a base that is not pretrained by the grid "
              "(its non-embedding parameter count)")  # fmt: skip
    if raw.get("chat_format", "doit") not in ("doit", "native"):
        _fail(path, f"{key}.chat_format", f"expected doit or native, got {raw['chat_format']!r}")
    if raw.get("sft_config") is not None:
        _file(path, f"{key}.sft_config", raw["sft_config"])
    return Base(raw["name"], raw["arch"], raw["path"], raw.get("chat_format", "doit"),
                raw.get("params"), raw.get("params_total"), pretrain, raw.get("sft_config"),
                raw.get("s_per_step"))  # fmt: skip


def _axis(path: Path, key: str, raw, names: set[str]) -> Axis:
    bases = abilities = None
    if isinstance(raw, dict):
        allowed = {"values", "bases", "abilities"} if key == "data.loo" else {"values", "bases"}
        raw = _mapping(path, key, raw, allowed)
        bases, abilities = raw.get("bases"), raw.get("abilities")
        if bases is not None and (not isinstance(bases, list) or not set(bases) <= names):
            _fail(path, f"{key}.bases", f"expected a list of base names ({', '.join(names)})")
        if abilities is not None:
            try:
                abilities = list(ab.parse_keys(list(abilities)))
            except (TypeError, ValueError) as e:
                _fail(path, f"{key}.abilities", str(e))
        raw = raw.get("values")
    if not isinstance(raw, list):
        _fail(path, key, "expected a list (or {values: [...], bases: [...]})")
    if key == "data.mix":
        return Axis([_file(path, f"{key}[{i}]", v) for i, v in enumerate(raw)], bases)
    return Axis(_ints(path, key, raw, minimum=1), bases, abilities)


def _eval_epochs(path: Path, value) -> str | list[int]:
    if value in EVAL_EPOCHS:
        return value
    if isinstance(value, list) and value:
        return sorted(_ints(path, "eval_epochs", value, minimum=1))
    _fail(path, "eval_epochs", f"expected all, last or a list of epochs, got {value!r}")


def _budgets(path: Path, value) -> dict[str, int]:
    value = _mapping(path, "max_new_tokens", value, set(ab.GENERATED_KINDS))
    missing = [k for k in ab.GENERATED_KINDS if k not in value]
    if missing:  # explicit: an untuned base never stops early, so a default would cost hours
        _fail(path, "max_new_tokens", f"give every generated kind; missing {', '.join(missing)}")
    for k, v in value.items():
        _ints(path, f"max_new_tokens.{k}", v, minimum=1)
    return value


def _choice(path: Path, key: str, value, allowed) -> str:
    if value not in allowed:
        _fail(path, key, f"expected one of {', '.join(allowed)}, got {value!r}")
    return value


def load_grid(path) -> Grid:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise GridError(f"{path}: {e}") from None
    raw = _mapping(path, "", raw, TOP_KEYS)
    for k in ("name", "doit_dir", "bases", "data", "sft", "max_new_tokens"):
        if raw.get(k) in (None, "", [], {}):
            _fail(path, k, "required")
    bases = [_base(path, i, b) for i, b in enumerate(raw["bases"])]
    names = [b.name for b in bases]
    if len(set(names)) != len(names):
        _fail(path, "bases", f"base names repeat: {names}")
    data = _mapping(path, "data", raw["data"], DATA_KEYS)
    axes = {k: _axis(path, f"data.{k}", v, set(names)) for k, v in data.items()}
    sft = _mapping(path, "sft", raw["sft"], {"config", "overrides"})
    _file(path, "sft.config", sft.get("config"))
    sweep = _mapping(path, "sweep", raw.get("sweep"))
    for k, v in sweep.items():
        if not isinstance(v, list) or not v:
            _fail(path, f"sweep.{k}", "expected a non-empty list of values")
    grid = Grid(
        path=path, raw=raw, name=str(raw["name"]), doit_dir=str(raw["doit_dir"]), bases=bases,
        data=axes, seeds=_ints(path, "seed", raw.get("seed", [0])),
        sample_seeds=_ints(path, "sample_seed", raw.get("sample_seed", [0])),
        sft={"config": sft["config"],
             "overrides": _mapping(path, "sft.overrides", sft.get("overrides"))},
        sweep=sweep, max_new_tokens=_budgets(path, raw["max_new_tokens"]),
        launcher=_choice(path, "launcher", raw.get("launcher", "inprocess"), LAUNCHERS),
        gpus=_ints(path, "gpus", raw.get("gpus", 1), minimum=1)[0],
        nodes=_ints(path, "nodes", raw.get("nodes", 1), minimum=1)[0],
        eval_epochs=_eval_epochs(path, raw.get("eval_epochs", "last")),
        eval_batch_size=_ints(path, "eval_batch_size", raw.get("eval_batch_size", 16), 1)[0],
        benchmarks=_benchmarks(path, raw.get("benchmarks")),
        keep=_choice(path, "keep", raw.get("keep", "last"), KEEP),
        slurm=_mapping(path, "slurm", raw.get("slurm")),
    )  # fmt: skip
    if grid.launcher == "inprocess" and grid.nodes > 1:
        _fail(path, "nodes", "a multi-node cell needs launcher torchrun or deepspeed")
    return grid


def _benchmarks(path: Path, value) -> list[dict]:
    """``[{name, data_dir, shots, cells}]``: public benchmarks scored for the matching cells."""
    if value is None:
        return []
    if not isinstance(value, list):
        _fail(path, "benchmarks", "expected a list")
    out = []
    for i, b in enumerate(value):
        b = _mapping(path, f"benchmarks[{i}]", b, {"name", "data_dir", "shots", "cells"})
        for k in ("name", "data_dir"):
            if not isinstance(b.get(k), str):
                _fail(path, f"benchmarks[{i}].{k}", "required (a string)")
        out.append({"name": b["name"], "data_dir": b["data_dir"],
                    "shots": _ints(path, f"benchmarks[{i}].shots", b.get("shots", 0))[0],
                    "cells": b.get("cells", "*")})  # fmt: skip
    return out
