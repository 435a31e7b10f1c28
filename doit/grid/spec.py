"""A grid file (`recipes/grids/*.yaml`), read and checked: `load_grid(path) -> Grid`.

The frozen dataclasses below are the grid's one description: every key of a grid file is a
field, with its type and default, documented once here (README.md's table restates them for
people; no other module states a default). Every problem is a `GridError` naming the file and
the key (``bases[1].pretrain.config``). Relative paths are resolved against the current
directory (where the runner is started, as for recipe configs); the grid keeps them as written,
so cell ids never depend on them.

A grid without ``data``, ``sft`` and ``max_new_tokens`` is pretraining-only: it builds its
bases (every one needs a ``pretrain`` block) and nothing else, optionally once per seed of
``pretrain_seed``. Loading a grid imports no torch (a test checks it).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from doit.data import abilities as ab
from doit.data import kinds as ak
from doit.data.chat_formats import CHAT_FORMATS
from doit.data.layout import TRAIN_POOLS
from doit.io import YamlError, parse_yaml, read_yaml

LAUNCHERS = ("inprocess", "python", "torchrun", "deepspeed")
KEEP = ("all", "scored", "best", "last")
EVAL_EPOCHS = ("all", "last")
DATA_AXES = ("per_ability", "loo", "synthetic", "mix", "random_mixes", "replay")
SEED = "{seed}"  # the placeholder a base path takes under `pretrain_seed`
NAME = re.compile(r"[A-Za-z0-9_.-]+")  # a name that becomes part of a path (cell ids, files)


class GridError(ValueError):
    """A bad grid file: the message names the file and the key."""


@dataclass(frozen=True)
class Pretrain:
    """``bases[i].pretrain``: how the runner builds a base that holds no model yet."""

    config: str  # a pretraining config (recipes/configs/pretrain/<size>.yaml), as written
    overrides: dict = field(default_factory=dict)  # flat pretraining keys over the config's


@dataclass(frozen=True)
class Base:
    """``bases[i]``: a model every data cell fine-tunes (or, pretraining-only, that is built)."""

    name: str  # the base's name in the results table
    arch: str  # its architecture (vanilla | resformer | svformer | llama ...)
    path: str  # its model dir as written (under the grid's bases_dir when that is set)
    chat_format: str = "doit"  # doit | native: the speaker tokens its cells train and score with
    params: int | None = None  # non-embedding parameters; None: a pretrain base's, from its run
    params_total: int | None = None  # all parameters; None: from pretraining, or unknown
    pretrain: Pretrain | None = None  # how to build it when `path` holds no model
    sft_config: str | None = None  # this base's recipe config instead of the grid's sft.config
    s_per_step: float | None = None  # seconds per SFT step, for the plan's time estimates
    seed: int | None = None  # set by `at_seed`: the pretrain_seed this base is built with

    @property
    def resolved(self) -> Path:
        return Path(self.path).resolve()

    def at_seed(self, seed: int) -> Base:
        """This base for one value of the grid's pretrain_seed axis: ``{seed}`` in its path
        filled in, ``seed`` added to its pretraining overrides."""
        pretrain = dataclasses.replace(
            self.pretrain, overrides={**self.pretrain.overrides, "seed": seed}
        )
        path = self.path.replace(SEED, str(seed))
        return dataclasses.replace(self, path=path, pretrain=pretrain, seed=seed)


@dataclass(frozen=True)
class Axis:
    """``data.<axis>``: one data axis's values, optionally for some bases only."""

    values: tuple  # n per ability (per_ability, loo), item counts (synthetic), mix files (mix)
    bases: tuple[str, ...] | None = None  # the bases it applies to; None: every base
    abilities: tuple[str, ...] | None = None  # loo only: the abilities left out in turn; None: all


@dataclass(frozen=True)
class RandomMixes:
    """``data.random_mixes``: RegMix-style random mixtures at a fixed budget, each a cell
    (drawn and written at plan time: doit.grid.random_mixes)."""

    count: int  # how many mixtures
    total: int  # training items of every mixture
    concentration: float = 1.0  # Dirichlet concentration around the pool prior (1: flat)
    seed: int = 0  # the draw's seed (also the mix files' sampling seed)
    source: str = "1000"  # the train pool they draw from: "1000" | full
    bases: tuple[str, ...] | None = None  # the bases it applies to; None: every base


@dataclass(frozen=True)
class Sft:
    """``sft``: the fine-tuning recipe of every data cell."""

    config: str  # a recipe config (recipes/configs/sft/...), as written
    overrides: dict = field(default_factory=dict)  # flat recipe keys over the config's


@dataclass(frozen=True)
class Benchmark:
    """``benchmarks[i]``: a public benchmark scored for the cells whose id matches ``cells``."""

    name: str  # cmmlu | agieval | ceval (doit.eval bench)
    data_dir: str  # where the benchmark's files are
    shots: int = 0  # few-shot examples
    cells: str = "*"  # a glob over cell ids


@dataclass(frozen=True)
class Grid:
    """A grid file, parsed and checked. Field names are the file's keys except ``seeds``
    (``seed``), ``sample_seeds`` (``sample_seed``), ``pretrain_seeds`` (``pretrain_seed``) and
    ``formulations`` (``formulation``)."""

    path: Path  # the file it was read from
    raw: dict  # the file's mapping as parsed (with --set values): plan.json keeps it
    name: str  # the study's name (required)
    doit_dir: str  # the corpus: cells draw from and are scored on it; pretraining reads it
    bases: tuple[Base, ...]  # required, names unique
    data: dict[str, Axis | RandomMixes] = field(default_factory=dict)  # {}: pretraining-only
    sft: Sft | None = None  # required with data; None: pretraining-only
    max_new_tokens: dict[str, int] = field(default_factory=dict)  # generated kind -> budget;
    # required with data and explicit for every kind: an untuned base never stops early
    seeds: tuple[int, ...] = (0,)  # training seeds of the fine-tuned (and n = 0) cells
    base_seeds: tuple[int, ...] | None = None  # the seeds the n = 0 cells are scored at (a
    # subset of ``seeds``); None: every seed. An untuned base has no training: its seed only
    # initialises speaker-token rows its tokenizer lacks, so [first seed] saves identical cells
    sample_seeds: tuple[int, ...] = (0,)  # data-draw seeds
    sweep: dict[str, tuple] = field(default_factory=dict)  # recipe key -> values, more axes
    launcher: str = "inprocess"  # inprocess | python | torchrun | deepspeed: how a cell trains
    gpus: int = 1  # GPUs per node a cell uses
    nodes: int = 1  # nodes a cell spans (> 1 needs torchrun or deepspeed)
    eval_epochs: str | tuple[int, ...] = "last"  # all | last | the epochs whose checkpoints score
    eval_batch_size: int = 16  # prediction batch
    benchmarks: tuple[Benchmark, ...] = ()  # public benchmarks for matching cells
    keep: str = "last"  # all | scored | best | last: checkpoint weights kept once scored
    slurm: dict = field(default_factory=dict)  # submitit parameters (slurm_partition, ...)
    pretrain_seeds: tuple[int, ...] | None = None  # pretraining-only: build every base once
    # per seed (its path's {seed} filled in, `seed` over its config); None: the bases as written
    bases_dir: str | None = None  # relative base paths are under it; None: the current directory
    # how cells train and are scored (doit.data.kinds.FORMULATIONS); several: an axis
    formulations: tuple[str, ...] = (ak.LETTER,)
    eval_formulations: tuple[str, ...] = ()  # scored besides, on the same checkpoints
    held_out_items: int | dict | None = None  # valid/test items scored per in-domain ability:
    # the first N of each file (C-Eval sets whole); None ("all", the default): every item; a
    # dict {"valid": N|None, "test": N|None} when the splits differ (`items_scored`)

    def items_scored(self, split: str) -> int | None:
        """The first that many items per in-domain ability are scored on ``split`` (None: all)."""
        if isinstance(self.held_out_items, dict):
            return self.held_out_items[split]
        return self.held_out_items

    @property
    def pretraining_only(self) -> bool:
        return self.sft is None

    def base(self, name: str) -> Base:
        return next(b for b in self.bases if b.name == name)


TOP_KEYS = {
    "name",
    "doit_dir",
    "bases",
    "data",
    "seed",
    "base_seed",
    "sample_seed",
    "sft",
    "sweep",
    "max_new_tokens",
    "launcher",
    "gpus",
    "nodes",
    "eval_epochs",
    "eval_batch_size",
    "benchmarks",
    "keep",
    "slurm",
    "pretrain_seed",
    "bases_dir",
    "formulation",
    "eval_formulations",
    "held_out_items",
}
BASE_KEYS = {
    "name",
    "arch",
    "params",
    "params_total",
    "chat_format",
    "path",
    "pretrain",
    "sft_config",
    "s_per_step",
}
SFT_KEYS = ("data", "sft", "max_new_tokens")  # present together, or the grid is pretraining-only
FINE_TUNING_ONLY = (
    "seed",
    "base_seed",
    "sample_seed",
    "sweep",
    "eval_epochs",
    "eval_batch_size",
    "benchmarks",
    "keep",
    "formulation",
    "eval_formulations",
    "held_out_items",
)


class _Check:
    """The checks of one grid mapping; ``files``: whether named files must exist (a plan read
    back is not checked against files: it was when it was planned)."""

    def __init__(self, path: Path, files: bool = True):
        self.path, self.files = path, files

    def fail(self, key: str, message: str):
        raise GridError(f"{self.path}: {key}: {message}")

    def ints(self, key: str, value, minimum: int = 0) -> tuple[int, ...]:
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                self.fail(key, f"expected integers >= {minimum}, got {v!r}")
        if len(set(values)) != len(values):
            self.fail(key, f"repeats a value: {values}")
        return tuple(values)

    def integer(self, key: str, value, minimum: int = 1) -> int:
        return self.ints(key, value, minimum)[0]

    def mapping(self, key: str, value, allowed=None) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(key, f"expected a mapping, got {type(value).__name__}")
        unknown = sorted(set(value) - set(allowed)) if allowed else []
        if unknown:
            self.fail(
                f"{key}.{unknown[0]}" if key else unknown[0],
                f"unknown key; expected one of {', '.join(sorted(allowed))}",
            )
        return value

    def file(self, key: str, value) -> str:
        if not isinstance(value, str) or (self.files and not Path(value).is_file()):
            self.fail(key, f"{value!r} is not a file (paths are relative to the current directory)")
        return value

    def name(self, key: str, value, what: str = "") -> None:
        """A name that ends up in a path (a cell id, a file name): never one that leaves it."""
        if not NAME.fullmatch(str(value)) or str(value) in (".", ".."):
            self.fail(
                key,
                f"{value!r}{what} becomes part of a path: use letters, digits, _ . - "
                "only (and not . or ..)",
            )

    def number(self, key: str, value) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            self.fail(key, f"expected a number > 0, got {value!r}")
        return value

    def choice(self, key: str, value, allowed) -> str:
        if value not in allowed:
            self.fail(key, f"expected one of {', '.join(allowed)}, got {value!r}")
        return value


def load_grid(path, overrides: dict | None = None) -> Grid:
    """The grid file at ``path``; ``overrides``: top-level keys set over the file's (``--set``)."""
    path = Path(path)
    try:
        raw = read_yaml(path)
    except OSError as e:
        raise GridError(f"{path}: {e}") from None
    except YamlError as e:
        raise GridError(str(e)) from None
    if overrides:
        raw = {**_Check(path).mapping("", raw), **overrides}
    return parse_grid(raw, path)


def parse_grid(raw, path: Path, files: bool = True) -> Grid:
    """A grid mapping (a file's, or plan.json's), checked; errors name ``path``."""
    c = _Check(Path(path), files)
    raw = c.mapping("", raw, TOP_KEYS)
    for k in ("name", "doit_dir", "bases"):
        if raw.get(k) in (None, "", [], {}):
            c.fail(k, "required")
    given = [k for k in SFT_KEYS if raw.get(k) not in (None, "", [], {})]
    if given:  # a grid with fine-tuning cells needs all three
        for k in SFT_KEYS:
            if k not in given:
                c.fail(k, "required")
    else:
        for k in FINE_TUNING_ONLY:
            if k in raw:
                c.fail(
                    k,
                    "only fine-tuning cells use it, and this grid has none (no data, sft "
                    "or max_new_tokens): a pretraining-only grid (pretrain_seed: its seeds)",
                )
    fields = {name: parse(c, raw[k]) for k, (name, parse) in OPTIONAL.items() if k in raw}
    if given and fields.get("pretrain_seeds") is not None:
        c.fail(
            "pretrain_seed",
            "only a pretraining-only grid (no data, sft or max_new_tokens) "
            "has a pretraining seed axis",
        )
    shape = {
        "seeded": fields.get("pretrain_seeds") is not None,
        "pretraining_only": not given,
        "bases_dir": fields.get("bases_dir"),
    }
    bases = tuple(_base(c, i, b, **shape) for i, b in enumerate(_list(c, "bases", raw["bases"])))
    names = [b.name for b in bases]
    if len(set(names)) != len(names):
        c.fail("bases", f"base names repeat: {names}")
    seeds, base_seeds = fields.get("seeds", Grid.seeds), fields.get("base_seeds") or ()
    if set(base_seeds) - set(seeds):
        c.fail("base_seed", f"{list(base_seeds)}: each must be one of seed {list(seeds)}")
    if given:
        fields["data"] = _data(c, raw["data"], set(names))
        fields["sft"] = _sft(c, raw["sft"])
        fields["max_new_tokens"] = _budgets(c, raw["max_new_tokens"])
    grid = Grid(
        path=Path(path),
        raw=raw,
        name=str(raw["name"]),
        doit_dir=str(raw["doit_dir"]),
        bases=bases,
        **fields,
    )
    if grid.launcher == "inprocess" and grid.nodes > 1:
        c.fail("nodes", "a multi-node cell needs launcher torchrun or deepspeed")
    return grid


def _list(c: _Check, key: str, value) -> list:
    if not isinstance(value, list):
        c.fail(key, f"expected a list, got {type(value).__name__}")
    return value


def _base(c: _Check, i: int, raw, seeded: bool, pretraining_only: bool, bases_dir) -> Base:
    key = f"bases[{i}]"
    raw = c.mapping(key, raw, BASE_KEYS)
    for k in ("name", "arch", "path"):
        if not isinstance(raw.get(k), str) or not raw[k]:
            c.fail(f"{key}.{k}", "required (a non-empty string)")
    c.name(f"{key}.name", raw["name"])
    fields = {k: raw[k] for k in BASE_KEYS - {"pretrain"} if raw.get(k) is not None}
    if raw.get("pretrain") is not None:
        p = c.mapping(f"{key}.pretrain", raw["pretrain"], {"config", "overrides"})
        fields["pretrain"] = Pretrain(
            c.file(f"{key}.pretrain.config", p.get("config")),
            c.mapping(f"{key}.pretrain.overrides", p.get("overrides")),
        )
    for k in ("params", "params_total"):
        if k in fields:
            c.integer(f"{key}.{k}", fields[k])
    if "s_per_step" in fields:
        c.number(f"{key}.s_per_step", fields["s_per_step"])
    if "chat_format" in fields:
        c.choice(f"{key}.chat_format", fields["chat_format"], CHAT_FORMATS)
    if "sft_config" in fields:
        c.file(f"{key}.sft_config", fields["sft_config"])
    _check_seed_axis(c, key, fields, seeded, pretraining_only)
    if "params" not in fields and "pretrain" not in fields:
        c.fail(
            f"{key}.params",
            "required for a base that is not pretrained by the grid "
            "(its non-embedding parameter count)",
        )
    if bases_dir:
        fields["path"] = str(Path(bases_dir) / fields["path"])
    return Base(**fields)


def _check_seed_axis(c: _Check, key: str, fields: dict, seeded: bool, pretraining_only: bool):
    """Under pretrain_seed every base is pretrained per seed, each into its own directory."""
    if not seeded:
        if SEED in fields["path"]:
            c.fail(f"{key}.path", f"{SEED} is filled in from pretrain_seed, which is not set")
        if pretraining_only and "pretrain" not in fields:
            c.fail(
                f"{key}.pretrain",
                "required in a pretraining-only grid (no data, sft or "
                "max_new_tokens): it builds its bases and nothing else",
            )
        return
    if "pretrain" not in fields:
        c.fail(f"{key}.pretrain", "required: pretrain_seed builds every base once per seed")
    if SEED not in fields["path"]:
        c.fail(f"{key}.path", f"needs {SEED} (each pretraining seed builds its own base)")
    if "seed" in fields["pretrain"].overrides:
        c.fail(f"{key}.pretrain.overrides.seed", "set by pretrain_seed; give one or the other")


def _data(c: _Check, raw, names: set[str]) -> dict[str, Axis | RandomMixes]:
    data = c.mapping("data", raw, set(DATA_AXES))
    axes = {
        k: (_random_mixes if k == "random_mixes" else _axis)(c, f"data.{k}", v, names)
        for k, v in data.items()
        if k != "replay"
    }
    if "replay" in data:
        axes["replay"] = _replay(c, data["replay"], axes.get("mix"))
    return axes


def _replay(c: _Check, raw, mixes: Axis | None) -> Axis:
    """``data.replay``: the replay counts every staged mix of ``data.mix`` is trained at (its
    later stages' ``replay``, doit.data.mixes), each a cell of its own."""
    if not isinstance(raw, list):
        c.fail("data.replay", "expected a list of integers >= 0 (items replayed per later stage)")
    values = c.ints("data.replay", raw, minimum=0)
    if mixes is None:
        c.fail("data.replay", "replays the staged mixes of data.mix: give data.mix")
    if c.files:
        from doit.data.mixes import MixError, load_mix

        for i, path in enumerate(mixes.values):
            try:
                staged = bool(load_mix(path).stages)
            except MixError as e:
                c.fail(f"data.mix[{i}]", str(e))
            if not staged:
                c.fail(f"data.mix[{i}]", f"{path} has no stages: data.replay needs a staged mix")
    return Axis(values)


def _random_mixes(c: _Check, key: str, raw, names: set[str]) -> RandomMixes:
    allowed = {"count", "total", "concentration", "seed", "source", "bases"}
    raw = c.mapping(key, raw, allowed)
    for k in ("count", "total"):
        if k not in raw:
            c.fail(f"{key}.{k}", "required (an integer >= 1)")
    fields = {k: c.integer(f"{key}.{k}", raw[k]) for k in ("count", "total")}
    conc = raw.get("concentration", 1.0)
    if isinstance(conc, bool) or not isinstance(conc, int | float) or conc <= 0:
        c.fail(f"{key}.concentration", f"expected a number > 0, got {conc!r}")
    bases = raw.get("bases")
    if bases is not None and (not isinstance(bases, list) or not set(bases) <= names):
        c.fail(f"{key}.bases", f"expected a list of base names ({', '.join(names)})")
    return RandomMixes(
        **fields,
        concentration=float(conc),
        seed=c.integer(f"{key}.seed", raw.get("seed", 0), minimum=0),
        source=c.choice(f"{key}.source", str(raw.get("source", "1000")), TRAIN_POOLS),
        bases=tuple(bases) if bases is not None else None,
    )


def _axis(c: _Check, key: str, raw, names: set[str]) -> Axis:
    bases = abilities = None
    if isinstance(raw, dict):
        allowed = {"values", "bases", "abilities"} if key == "data.loo" else {"values", "bases"}
        raw = c.mapping(key, raw, allowed)
        bases, abilities = raw.get("bases"), raw.get("abilities")
        if bases is not None and (not isinstance(bases, list) or not set(bases) <= names):
            c.fail(f"{key}.bases", f"expected a list of base names ({', '.join(names)})")
        if abilities is not None:
            try:
                abilities = tuple(ab.parse_keys(list(abilities)))
            except (TypeError, ValueError) as e:
                c.fail(f"{key}.abilities", str(e))
        raw = raw.get("values")
    if not isinstance(raw, list):
        c.fail(key, "expected a list (or {values: [...], bases: [...]})")
    bases = tuple(bases) if bases is not None else None
    if key == "data.mix":
        for i, v in enumerate(raw):
            c.file(f"{key}[{i}]", v)
            c.name(f"{key}[{i}]", Path(v).stem, " (the mix file's stem, in its cells' ids)")
        return Axis(tuple(raw), bases)
    return Axis(c.ints(key, raw, minimum=1), bases, abilities)


def _sft(c: _Check, raw) -> Sft:
    sft = c.mapping("sft", raw, {"config", "overrides"})
    return Sft(
        c.file("sft.config", sft.get("config")), c.mapping("sft.overrides", sft.get("overrides"))
    )


def _budgets(c: _Check, value) -> dict[str, int]:
    value = c.mapping("max_new_tokens", value, set(ak.GENERATED_KINDS))
    missing = [k for k in ak.GENERATED_KINDS if k not in value]
    if missing:  # explicit: an untuned base never stops early, so a default would cost hours
        c.fail("max_new_tokens", f"give every generated kind; missing {', '.join(missing)}")
    for k, v in value.items():
        c.integer(f"max_new_tokens.{k}", v)
    return value


def _sweep(c: _Check, value) -> dict[str, tuple]:
    sweep = c.mapping("sweep", value)
    for k, v in sweep.items():
        if not isinstance(v, list) or not v:
            c.fail(f"sweep.{k}", "expected a non-empty list of values")
        for x in [k, *v]:  # a swept key and its values tag the cells' ids
            c.name(f"sweep.{k}", x, " (in the cells' ids)")
    return {k: tuple(v) for k, v in sweep.items()}


def _eval_epochs(c: _Check, value) -> str | tuple[int, ...]:
    if value in EVAL_EPOCHS:
        return value
    if isinstance(value, list) and value:
        return tuple(sorted(c.ints("eval_epochs", value, minimum=1)))
    c.fail("eval_epochs", f"expected all, last or a list of epochs, got {value!r}")


def _benchmarks(c: _Check, value) -> tuple[Benchmark, ...]:
    out = []
    for i, b in enumerate(_list(c, "benchmarks", [] if value is None else value)):
        b = c.mapping(f"benchmarks[{i}]", b, {"name", "data_dir", "shots", "cells"})
        for k in ("name", "data_dir"):
            if not isinstance(b.get(k), str):
                c.fail(f"benchmarks[{i}].{k}", "required (a string)")
        c.name(f"benchmarks[{i}].name", b["name"], " (its scores' file name)")
        if "shots" in b:
            b = {**b, "shots": c.integer(f"benchmarks[{i}].shots", b["shots"], minimum=0)}
        out.append(Benchmark(**b))
    return tuple(out)


def _formulations(key: str, empty: bool):
    def parse(c: _Check, value) -> tuple[str, ...]:
        values = value if isinstance(value, list) else [value]
        if not values and not empty:
            c.fail(key, f"expected a formulation or a list of them ({', '.join(ak.FORMULATIONS)})")
        for v in values:
            c.choice(key, v, ak.FORMULATIONS)
        if len(set(values)) != len(values):
            c.fail(key, f"repeats a value: {values}")
        return tuple(values)

    return parse


def _held_out_items(c: _Check, value) -> int | dict | None:
    """``all`` (None) or a positive count of items per ability and split, or a mapping
    ``{valid: ..., test: ...}`` of those (each split's own; equal ones read as one)."""
    if isinstance(value, dict):
        if set(value) != {"valid", "test"}:
            c.fail("held_out_items", f"expected the keys valid and test, got {sorted(value)}")
        per_split = {split: _split_items(c, value[split]) for split in ("valid", "test")}
        return per_split["valid"] if per_split["valid"] == per_split["test"] else per_split
    return _split_items(c, value)


def _split_items(c: _Check, value) -> int | None:
    """One split's ``all`` (None) or positive count."""
    if value == "all":
        return None
    if isinstance(value, list | dict):
        c.fail(
            "held_out_items", f"expected all, one integer >= 1 or {{valid, test}}, got {value!r}"
        )
    return c.integer("held_out_items", value)


def _bases_dir(c: _Check, value) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        c.fail("bases_dir", f"expected a directory (a string), got {value!r}")
    return value


# file key -> (Grid field, parser): the keys a grid may leave out (their defaults are Grid's)
OPTIONAL = {
    "seed": ("seeds", lambda c, v: c.ints("seed", v)),
    "base_seed": ("base_seeds", lambda c, v: c.ints("base_seed", v)),
    "sample_seed": ("sample_seeds", lambda c, v: c.ints("sample_seed", v)),
    "sweep": ("sweep", _sweep),
    "launcher": ("launcher", lambda c, v: c.choice("launcher", v, LAUNCHERS)),
    "gpus": ("gpus", lambda c, v: c.integer("gpus", v)),
    "nodes": ("nodes", lambda c, v: c.integer("nodes", v)),
    "eval_epochs": ("eval_epochs", _eval_epochs),
    "eval_batch_size": ("eval_batch_size", lambda c, v: c.integer("eval_batch_size", v)),
    "benchmarks": ("benchmarks", _benchmarks),
    "keep": ("keep", lambda c, v: c.choice("keep", v, KEEP)),
    "slurm": ("slurm", lambda c, v: c.mapping("slurm", v)),
    "pretrain_seed": (
        "pretrain_seeds",
        lambda c, v: None if v is None else c.ints("pretrain_seed", v),
    ),
    "bases_dir": ("bases_dir", _bases_dir),
    "formulation": ("formulations", _formulations("formulation", empty=False)),
    "eval_formulations": ("eval_formulations", _formulations("eval_formulations", empty=True)),
    "held_out_items": ("held_out_items", _held_out_items),
}


def parse_sets(pairs: list[str]) -> dict:
    """``--set KEY=VALUE`` pairs as top-level grid keys (each VALUE read as YAML)."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise GridError(
                f"--set {pair!r}: expected KEY=VALUE (VALUE in YAML, e.g. pretrain_seed=[0,1,2])"
            )
        try:
            out[key.strip()] = parse_yaml(value, f"--set {key}")
        except YamlError as e:
            raise GridError(str(e)) from None
    return out
