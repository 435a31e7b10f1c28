"""Data mixes: one YAML schema, validated on load, sampled by seeded hash (never first-k).

```yaml
seed: 0                       # int: sampling seed
source: full                  # "1000" | "full": which train pool to draw from
counts: {ethics: 64, math: all}   # ability -> int >= 1 | "all" (the whole pool)
fill:                         # optional: spread a budget equally
  abilities: [biology, ...]   # who shares it (default: every ability not in counts)
  total: 10000                # the mix's total size, counts included
  rule: equal                 # the only rule: equal shares, capped at pool size
  allow_short: false          # true: a total the pools cannot reach is no error
exclude: [role_play]          # abilities dropped entirely (leave-one-ability-out)
synthetic: 2560               # int: synthetic items added on top (default 0)
provenance: {paper: ...}      # free-form: where the recipe comes from
```
A **staged** mix trains its stages in order, each from the one before's final weights with a
fresh optimiser (`doit.train.sft.stages`; DMT's specialist-then-general recipe is one):

```yaml
seed: 0
source: "1000"                # seed and source are the whole mix's
stages:                       # two or more, each a mix of the keys above (no seed, source)
  - counts: {math: 256, code: 256}
    num_train_epochs: 3       # optional, per stage: its own schedule over the recipe's
    learning_rate: 3.0e-4     #   (num_train_epochs, learning_rate, lr_scheduler_type)
  - fill: {total: 1000}
    exclude: [math, code]
    replay: 64                # int: items drawn again from the earlier stages' draws
```
A stage draws from the pools as a mix of its own (so an ability two stages both take gets the
same first-ranked items, nested); ``replay`` adds a seeded sample of the earlier stages' items.

``fill`` gives each listed ability an equal share of ``total - sum(counts)``; an
ability whose pool is smaller than its share takes its whole pool and the overflow
is shared again among the others; what cannot be split evenly goes one item each
to the uncapped abilities in registry order. When every fill ability is capped and the
mix still falls short of ``total``, that is an error naming the capping pools, unless
``allow_short: true``; then the manifest records the shortfall (``shortfall``).

A mix spec is the only way doit draws training items. The YAML mixes above are read by
`load_mix`; the study's other cells are specs built by small constructors: `per_ability_spec`
(n items of every ability, the subset cell ``nNNNN``; with ``exclude``, a leave-one-ability-out
cell) and `synthetic_spec` (n synthetic items, the cell ``sNNNNN``). `draw` ranks each pool by
seeded hash of item identity (`doit.data.sampling`), so cells are nested (n inside m) and the
same for any file order; `sample_mix` loads the pools a spec needs and draws.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from doit.data import abilities as ab
from doit.data.cells import cell_name, pool_sizes, source_is_synthetic, write_cell
from doit.data.layout import TRAIN_POOLS
from doit.data.load import load_items
from doit.data.sampling import by_ability, take
from doit.io import YamlError, atomic_output_dir, check_output, read_yaml

ALL = "all"
_KEYS = {"seed", "source", "counts", "fill", "exclude", "synthetic", "provenance", "stages"}
_DRAW_KEYS = ("counts", "fill", "exclude", "synthetic")  # what a mix, or a stage, draws
STAGE_SCHEDULE = ("num_train_epochs", "learning_rate", "lr_scheduler_type")  # a stage's own
_STAGE_KEYS = {*_DRAW_KEYS, "replay", *STAGE_SCHEDULE}


@dataclass
class Fill:
    abilities: tuple[str, ...]
    total: int
    rule: str = "equal"
    allow_short: bool = False


@dataclass
class MixSpec:
    seed: int = 0
    source: str = "1000"
    counts: dict[str, int | str] = field(default_factory=dict)
    fill: Fill | None = None
    exclude: tuple[str, ...] = ()
    synthetic: int = 0
    provenance: dict[str, Any] = field(default_factory=dict)
    path: str = "<mix>"
    cell: str | None = None  # the cell a constructor built the spec for; None: a YAML mix
    stages: tuple[Stage, ...] = ()  # a staged mix's stages (then it draws nothing itself)

    @property
    def drawing(self) -> list[MixSpec]:
        """The specs that draw items: a staged mix's stages', or the mix itself."""
        return [st.spec for st in self.stages] or [self]


@dataclass
class Stage:
    """One stage of a staged mix: what it draws (``spec``: the mix's seed and source), how many
    of the earlier stages' items it draws again (``replay``) and its own training keys
    (``schedule``: `STAGE_SCHEDULE` names, over the recipe's)."""

    spec: MixSpec
    replay: int = 0
    schedule: dict[str, Any] = field(default_factory=dict)


class MixError(ValueError):
    """A bad mix, or a draw its pools cannot give. ``key``: for a constructed cell, the recipe
    flag it came from (``per_ability`` or ``synthetic``); a YAML mix's message names its key."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


def _fail(path: str, key: str, message: str):
    raise MixError(f"{path}: {key}: {message}")


def per_ability_spec(
    n: int, seed: int = 0, source: str = "1000", abilities=None, exclude=()
) -> MixSpec:
    """n items of each ability (``abilities``, default all) but ``exclude``: the subset cell
    ``nNNNN``, or with ``exclude`` a leave-one-ability-out cell."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise MixError(f"n={n!r}: items per ability must be an integer >= 1", "per_ability")
    keys = ab.parse_keys(abilities) if abilities else ab.ABILITY_KEYS
    excluded = ab.parse_keys(list(exclude)) if exclude else ()
    name = cell_name(n) + "".join(f"-no-{k}" for k in excluded)
    counts = {k: n for k in keys if k not in excluded}
    return MixSpec(
        seed=seed, source=source, counts=counts, exclude=excluded, cell=name, path=f"cell {name}"
    )


def synthetic_spec(total: int, seed: int = 0) -> MixSpec:
    """``total`` synthetic items: the cell ``sNNNNN``."""
    if isinstance(total, bool) or not isinstance(total, int) or total < 1:
        raise MixError(f"{total!r}: synthetic items must be an integer >= 1", "synthetic")
    name = cell_name(total, synthetic=True)
    return MixSpec(seed=seed, synthetic=total, cell=name, path=f"cell {name}")


def _over_pool(spec: MixSpec, key: str, n: int, have: int):
    """The error for a draw of ``n`` from a pool of ``have``: a constructed cell says it in the
    words of the subset command and the recipe's flags, a YAML mix names its file and key."""
    if key == ab.SYNTHETIC:
        if spec.cell is not None:
            raise MixError(f"{n} exceeds the synthetic pool of {have} items", "synthetic")
        _fail(spec.path, "synthetic", f"{n} exceeds the synthetic pool of {have}")
    if spec.cell is not None:
        raise MixError(
            f"n={n} exceeds the {key!r} pool of {have} items (use a larger --pool or smaller "
            "sizes)",
            "per_ability",
        )
    _fail(spec.path, f"counts.{key}", f"{n} exceeds the {spec.source} pool of {have}")


def _int(path, key, value, minimum=0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _fail(path, key, f"expected an integer >= {minimum}, got {value!r}")
    return value


def _keys(path, key, value) -> tuple[str, ...]:
    if not isinstance(value, list):
        _fail(path, key, f"expected a list of ability keys, got {value!r}")
    try:
        return ab.parse_keys([str(v) for v in value])
    except ValueError as e:
        _fail(path, key, str(e))


def parse_mix(raw: Any, path: str = "<mix>") -> MixSpec:
    if not isinstance(raw, dict):
        _fail(path, "(top)", "expected a mapping")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        _fail(path, unknown[0], f"unknown key; allowed: {', '.join(sorted(_KEYS))}")
    spec = MixSpec(path=path, seed=_int(path, "seed", raw.get("seed", 0)))
    spec.source = str(raw.get("source", "1000"))
    if spec.source not in TRAIN_POOLS:
        _fail(path, "source", f"expected {' or '.join(TRAIN_POOLS)}, got {raw.get('source')!r}")
    spec.provenance = raw.get("provenance") or {}
    if "stages" in raw:
        drawn = [k for k in _DRAW_KEYS if k in raw]
        if drawn:
            _fail(path, drawn[0], "a staged mix draws in its stages, not at the top")
        spec.stages = _parse_stages(raw["stages"], spec, path)
        return spec
    return _parse_draw(raw, spec, path)


def _parse_draw(raw: dict, spec: MixSpec, path: str) -> MixSpec:
    """``raw``'s draw keys (`_DRAW_KEYS`) into ``spec``."""
    counts = raw.get("counts") or {}
    if not isinstance(counts, dict):
        _fail(path, "counts", "expected a mapping ability -> int | all")
    for key, value in counts.items():
        canon = _keys(path, f"counts.{key}", [key])[0]
        if value == 0:
            _fail(path, f"counts.{key}", "0: an ability left out of a mix goes in `exclude`")
        spec.counts[canon] = value if value == ALL else _int(path, f"counts.{key}", value, 1)
    spec.exclude = _keys(path, "exclude", raw.get("exclude") or [])
    spec.synthetic = _int(path, "synthetic", raw.get("synthetic", 0))
    if raw.get("fill") is not None:
        spec.fill = _parse_fill(raw["fill"], spec, path)
    clash = sorted(set(spec.counts) & set(spec.exclude))
    if clash:
        _fail(path, "exclude", f"{clash[0]} is both counted and excluded")
    return spec


def _parse_stages(raw: Any, spec: MixSpec, path: str) -> tuple[Stage, ...]:
    if not isinstance(raw, list) or len(raw) < 2:
        _fail(path, "stages", "expected a list of two or more stages (one stage is a plain mix)")
    stages = []
    for i, one in enumerate(raw, 1):
        where = f"{path}: stages[{i}]"
        if not isinstance(one, dict):
            _fail(where, "(stage)", "expected a mapping")
        unknown = sorted(set(one) - _STAGE_KEYS)
        if unknown:
            _fail(where, unknown[0], f"unknown key; allowed: {', '.join(sorted(_STAGE_KEYS))}")
        drawn = _parse_draw(one, MixSpec(seed=spec.seed, source=spec.source, path=where), where)
        replay = _int(where, "replay", one.get("replay", 0))
        if replay and i == 1:
            _fail(where, "replay", "the first stage has no earlier stage to replay")
        if not (drawn.counts or drawn.fill or drawn.synthetic or replay):
            _fail(where, "(stage)", "draws nothing: give counts, fill, synthetic or replay")
        stages.append(Stage(drawn, replay, _stage_schedule(one, where)))
    return tuple(stages)


def _stage_schedule(raw: dict, where: str) -> dict[str, Any]:
    out = {k: raw[k] for k in STAGE_SCHEDULE if k in raw}
    for k in ("num_train_epochs", "learning_rate"):
        value = out.get(k, 1)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            _fail(where, k, f"expected a number > 0, got {value!r}")
    if not isinstance(out.get("lr_scheduler_type", ""), str):
        _fail(where, "lr_scheduler_type", f"expected a name, got {out['lr_scheduler_type']!r}")
    return out


def _parse_fill(raw: Any, spec: MixSpec, path: str) -> Fill:
    if not isinstance(raw, dict) or set(raw) - {"abilities", "total", "rule", "allow_short"}:
        _fail(
            path,
            "fill",
            "expected {abilities: [...], total: int, rule: equal, allow_short: bool}",
        )
    allow_short = raw.get("allow_short", False)
    if not isinstance(allow_short, bool):
        _fail(path, "fill.allow_short", f"expected true or false, got {allow_short!r}")
    if raw.get("rule", "equal") != "equal":
        _fail(path, "fill.rule", f"only 'equal' is supported, got {raw.get('rule')!r}")
    default = [k for k in ab.ABILITY_KEYS if k not in spec.counts and k not in spec.exclude]
    keys = _keys(path, "fill.abilities", raw.get("abilities", default))
    for k in keys:
        if k in spec.counts or k in spec.exclude:
            _fail(path, "fill.abilities", f"{k} is also in counts or exclude")
    return Fill(keys, _int(path, "fill.total", raw.get("total"), minimum=1), "equal", allow_short)


def load_mix(path) -> MixSpec:
    path = Path(path)
    try:
        raw = read_yaml(path)
    except YamlError as e:
        raise MixError(str(e)) from None
    return parse_mix(raw, str(path))


def fill_equal(budget: int, keys: tuple[str, ...], pools: dict[str, int]) -> dict[str, int]:
    """Equal shares of ``budget`` over ``keys``, capped at pool size, overflow re-shared."""
    out, open_keys = {}, list(keys)
    while open_keys:
        share = budget // len(open_keys)
        capped = [k for k in open_keys if pools.get(k, 0) <= share]
        if not capped:
            break
        for k in capped:
            out[k] = pools.get(k, 0)
            budget -= out[k]
            open_keys.remove(k)
    if open_keys:
        share, extra = divmod(budget, len(open_keys))
        ordered = [k for k in ab.ABILITY_KEYS if k in open_keys]
        for i, k in enumerate(ordered):
            out[k] = share + (1 if i < extra else 0)
    return out


def resolve_counts(spec: MixSpec, pools: dict[str, int]) -> dict[str, int]:
    """Items per ability for ``spec`` given each ability's pool size."""
    counts = {k: pools.get(k, 0) if v == ALL else v for k, v in spec.counts.items()}
    for k, n in counts.items():
        if n > pools.get(k, 0):
            _over_pool(spec, k, n, pools.get(k, 0))
    if spec.fill is not None:
        budget = spec.fill.total - sum(counts.values())
        if budget < 0:
            _fail(
                spec.path,
                "fill.total",
                f"{spec.fill.total} is below the fixed counts' sum {sum(counts.values())}",
            )
        counts.update(fill_equal(budget, spec.fill.abilities, pools))
        short = shortfall(spec, pools, counts)
        if short and not spec.fill.allow_short:
            capped = ", ".join(f"{k} {n}" for k, n in short["capped_by"].items())
            _fail(
                spec.path,
                "fill.total",
                f"{spec.fill.total} is out of reach of the {spec.source} pools: "
                f"{short['resolved']} items, short by {short['short']}; every fill ability "
                f"takes its whole pool ({capped}). Use a larger source, a smaller total, "
                f"or fill.allow_short: true",
            )
    return {k: counts[k] for k in ab.ABILITY_KEYS if counts.get(k)}


def shortfall(spec: MixSpec, pools: dict[str, int], counts: dict[str, int]) -> dict | None:
    """How far resolved ``counts`` fall short of ``fill.total`` and the pools that cap the
    fill, or None when the total is reached (or there is no fill)."""
    if spec.fill is None or sum(counts.values()) >= spec.fill.total:
        return None
    return {
        "total": spec.fill.total,
        "resolved": sum(counts.values()),
        "short": spec.fill.total - sum(counts.values()),
        "capped_by": {k: pools.get(k, 0) for k in ab.ABILITY_KEYS if k in spec.fill.abilities},
    }


def load_pools(spec: MixSpec, source) -> tuple[list[dict], list[dict]]:
    """The items of the train pool and of the synthetic pool that ``spec`` (or any of its
    stages) draws from (a pool it takes nothing from is not read)."""
    specs = spec.drawing
    pool = load_items(source, spec.source) if any(s.counts or s.fill for s in specs) else []
    synthetic = load_items(source, ab.SYNTHETIC) if any(s.synthetic for s in specs) else []
    return pool, synthetic


def draw_stages(spec: MixSpec, pool: list[dict], synthetic: list[dict]) -> list[list[dict]]:
    """A staged mix's items, one list per stage: the stage's own draw, then ``replay`` items
    of the earlier stages' own draws (seeded, ranked for the stage: never their first k)."""
    out, earlier = [], []
    for i, stage in enumerate(spec.stages, 1):
        items = draw(stage.spec, pool, synthetic)[0]
        if stage.replay > len(earlier):
            _fail(
                stage.spec.path,
                "replay",
                f"{stage.replay} exceeds the earlier stages' {len(earlier)} items",
            )
        replayed = take(earlier, stage.replay, spec.seed, f"replay-{i}")
        earlier += items
        out.append(items + replayed)
    return out


def draw(spec: MixSpec, pool: list[dict], synthetic: list[dict]) -> tuple[list[dict], dict | None]:
    """The items ``spec`` takes from loaded pools (abilities in registry order, then synthetic
    items) and its shortfall (``shortfall``)."""
    pools = pool_sizes(pool)
    counts = resolve_counts(spec, pools)
    groups = by_ability(pool)
    items = [it for k, n in counts.items() for it in take(groups[k], n, spec.seed, "subset")]
    if spec.synthetic:
        if spec.synthetic > len(synthetic):
            _over_pool(spec, ab.SYNTHETIC, spec.synthetic, len(synthetic))
        items += take(synthetic, spec.synthetic, spec.seed, "subset")
    return items, shortfall(spec, pools, counts)


def sample_mix(spec: MixSpec, source, stage: int | None = None) -> list[dict]:
    """The items of ``spec`` drawn from the DoIT directory ``source``; of a staged mix, those
    of its ``stage`` (1-based), or of every stage in order without one."""
    if not spec.stages:
        if stage is not None:
            _fail(spec.path, "stages", f"stage {stage} asked of a mix without stages")
        return draw(spec, *load_pools(spec, source))[0]
    per_stage = draw_stages(spec, *load_pools(spec, source))
    if stage is None:
        return [it for items in per_stage for it in items]
    if not 1 <= stage <= len(per_stage):
        _fail(spec.path, "stages", f"stage {stage} asked; the mix has {len(per_stage)}")
    return per_stage[stage - 1]


def build_mix(source, spec: MixSpec, out, overwrite: bool = False) -> dict:
    """Write the mix as a DoIT-layout cell at ``out``; returns its manifest."""
    source, out = Path(source), Path(out)
    check_output(
        out, "mix", inputs={"the source": source}, overwrite=overwrite
    )  # before reading anything
    if spec.stages:
        _fail(spec.path, "stages", "a staged mix is trained stage by stage (`doit sft --mix`)")
    items, short = draw(spec, *load_pools(spec, source))
    args = {"source": str(source), "mix": spec.path, "seed": spec.seed}
    with atomic_output_dir(out, kind="mix", overwrite=overwrite, sources=[source]) as tmp:
        return write_cell(
            tmp,
            items,
            source,
            kind="mix",
            seed=spec.seed,
            args=args,
            notes=[f"mix {spec.path}"],
            synthetic_data=source_is_synthetic(source),
            mix={
                "source": spec.source,
                "counts": spec.counts,
                "fill": None if spec.fill is None else vars(spec.fill),
                "exclude": list(spec.exclude),
                "synthetic": spec.synthetic,
                "provenance": spec.provenance,
            },
            shortfall=short,
        )
