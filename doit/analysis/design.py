"""``doit analysis design``: the cheapest designs that decide what a user asks (issue #31).

    doit analysis design --mde data=4,size=5[,curriculum=6] --candidates FILE.yaml
        --max-cost C --out DIR [--pilot STUDY | --seed-sd X --score-levels ... --item-corr R]

Every combination of the candidate file's axes (`Candidates`: base sets, n grids, test items per
ability, seeds; recipes/power/paper.yaml is one, each key commented) is a design; its cost is
its training steps times each base's ``cost_per_step`` plus its scoring (``cost_per_item``: one
test item scored once, per scored epoch), in the file's ``unit``. Each design's table is
`doit.stats.planner.power_rows` on the variance inputs (`--pilot`, else the priors), and an
ability is **decided** when every target holds: mde <= the target (points; ``curriculum``: the
policy-vs-uniform difference) and, for data and size, resistance reachable. A design whose
test items exceed what an ability's pool leaves (card total - valid - its largest n) does not
decide that ability.

Outputs in DIR: ``designs.csv`` (every design: cost, abilities decided, the Pareto flag),
``pareto.csv`` (the designs no cheaper design decides as many abilities as), ``best.csv`` (the
best design's per-ability table: the most abilities within --max-cost, then the cheapest) and
``grid.yaml`` (the best as a grid: the candidate file's grid with its bases, n grid and seeds;
its test items said in its first lines, to plan with ``doit grid plan grid.yaml --items N``).
An ability no design within the cost decides is one line (what it would take, or that no
candidate does), and the exit status is 2.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from doit.data import abilities as ab
from doit.io import atomic_write_text, read_yaml
from doit.stats import variance as V
from doit.stats.planner import card_items, decided, power_rows
from doit.stats.power import DELTA

AXES = {"data": "data", "size": "size", "curriculum": "policy", "policy": "policy"}
DESIGN_COLUMNS = ["design", "cost", "decided", "bases", "ns", "items", "seeds", "pareto"]


class DesignError(ValueError):
    """A bad target or candidate file: one line naming it."""


@dataclass(frozen=True)
class Candidates:
    """The candidate file: the grid the designs vary, its cost unit, the bases (params, cost
    per step, cost per scored item), and the axes every combination of which is a design."""

    grid: str
    unit: str
    bases: dict  # name -> {params, cost_per_step, cost_per_item}
    base_sets: tuple
    ns: tuple
    items: tuple
    seeds: tuple
    epochs: int
    scored_epochs: int
    batch_size: int
    policy: bool


def parse_targets(text: str, delta: float) -> dict[str, float]:
    """``data=4,size=5,curriculum=6`` -> {data: 4, size: 5, policy: 6}; an MDE is at least
    delta, so a target at or below it is refused."""
    out = {}
    for part in (text or "").split(","):
        key, _, value = part.partition("=")
        if key.strip() not in AXES:
            raise DesignError(f"--mde: {key.strip()!r}: expected {', '.join(AXES)} (axis=points)")
        try:
            target = float(value)
        except ValueError:
            raise DesignError(f"--mde: {part!r}: expected axis=points") from None
        if target <= delta:
            raise DesignError(
                f"--mde: {key.strip()}={target:g}: an MDE is delta + 2.8 se, never at or below "
                f"the margin delta={delta:g}; ask for more, or lower --delta"
            )
        out[AXES[key.strip()]] = target
    return out


def read_candidates(path) -> Candidates:
    """The candidate file (module docstring); an error names the file and the key."""
    raw = read_yaml(path)

    def need(key, kind):
        if not isinstance(raw.get(key), kind):
            raise DesignError(f"{path}: {key}: expected a {kind.__name__}")
        return raw[key]

    bases = {}
    for i, b in enumerate(need("bases", list)):
        if not isinstance(b, dict) or not {"name", "params", "cost_per_step"} <= set(b):
            raise DesignError(f"{path}: bases[{i}]: needs name, params, cost_per_step")
        bases[b["name"]] = {
            "params": float(b["params"]),
            "cost_per_step": float(b["cost_per_step"]),
            "cost_per_item": float(b.get("cost_per_item", 0.0)),
        }
    base_sets = tuple(tuple(s) for s in need("base_sets", list))
    for i, s in enumerate(base_sets):
        if not s or not set(s) <= set(bases):
            raise DesignError(f"{path}: base_sets[{i}]: names of bases ({', '.join(bases)})")
    return Candidates(
        grid=str(need("grid", str)),
        unit=str(raw.get("unit", "cost")),
        bases=bases,
        base_sets=base_sets,
        ns=tuple(tuple(sorted(n)) for n in need("ns", list)),
        items=tuple(int(m) for m in need("items", list)),
        seeds=tuple(int(s) for s in need("seeds", list)),
        epochs=int(raw.get("epochs", 1)),
        scored_epochs=int(raw.get("scored_epochs", 1)),
        batch_size=int(raw.get("batch_size", 1)),
        policy=bool(raw.get("policy", False)),
    )


def cost(c: Candidates, bases, ns, items: int, seeds: int) -> float:
    """Training steps x cost_per_step over the trained cells, plus scoring every cell (the
    untuned ones once) on items x abilities x scored epochs."""
    k, total = len(ab.ABILITY_KEYS), 0.0
    for b in bases:
        spec = c.bases[b]
        steps = sum(math.ceil(k * n * c.epochs / c.batch_size) for n in ns)
        total += seeds * steps * spec["cost_per_step"]
        scored = items * k * (1 + seeds * len(ns) * c.scored_epochs)
        total += scored * spec["cost_per_item"]
    return total


def evaluate(c: Candidates, by_ability, sources, targets, delta: float = DELTA):
    """(designs table, per design its rows): every combination of the axes."""
    _, pool = card_items()
    designs, tables = [], {}
    combos = itertools.product(c.base_sets, c.ns, c.items, c.seeds)
    for i, (bases, ns, items, seeds) in enumerate(combos):
        shape = V.Shape({b: c.bases[b]["params"] for b in bases}, ns, items, seeds)
        rows = power_rows(shape, by_ability, sources, delta, c.policy)
        for r in rows:
            room = pool.get(r["ability"], items) - 100 - max(ns)  # valid keeps its 100
            r["room"] = room
            r["decided"] = r["ability"] != "macro" and items <= room and decided(r, targets)
        name = f"d{i}"
        tables[name] = rows
        designs.append(
            dict(
                design=name,
                cost=round(cost(c, bases, ns, items, seeds), 3),
                decided=sum(r["decided"] for r in rows),
                bases=",".join(bases),
                ns=",".join(map(str, ns)),
                items=items,
                seeds=seeds,
            )
        )
    table = pd.DataFrame(designs).sort_values(["cost", "decided"], ascending=[True, False])
    best_so_far, pareto = -1, []
    for d in table["decided"]:
        pareto.append(bool(d > best_so_far))
        best_so_far = max(best_so_far, d)
    table["pareto"] = pareto
    return table.reset_index(drop=True)[DESIGN_COLUMNS], tables


def best(designs: pd.DataFrame, max_cost: float):
    """The design deciding the most abilities within ``max_cost``, the cheapest of them."""
    within = designs[designs["cost"] <= max_cost]
    if within.empty:
        return None
    return within.sort_values(["decided", "cost"], ascending=[False, True]).iloc[0]


def unmet_lines(designs, tables, chosen, max_cost: float, unit: str, targets: dict) -> list[str]:
    """One line per ability the chosen design does not decide: the cheapest candidate that
    does (beyond the cost), or that none does."""
    mine = {r["ability"]: r for r in tables[chosen["design"]]} if chosen is not None else {}
    lines = []
    for ability in ab.ABILITY_KEYS:
        if mine.get(ability, {}).get("decided"):
            continue
        deciding = [
            d
            for d in designs.itertuples()
            if any(r["ability"] == ability and r["decided"] for r in tables[d.design])
        ]
        if deciding:
            d = min(deciding, key=lambda d: d.cost)
            lines.append(
                f"{ability}: not decided within --max-cost {max_cost:g} {unit}; the cheapest "
                f"candidate that decides it costs {d.cost:g} ({d.items} test items, {d.seeds} "
                f"seeds, bases {d.bases}, n {d.ns})"
            )
        else:
            rows = [
                r for d in designs.itertuples() for r in tables[d.design] if r["ability"] == ability
            ]
            why = _why(rows, targets)
            lines.append(f"{ability}: no candidate decides it ({why})")
    return lines


def _why(rows: list[dict], targets: dict) -> str:
    """What the nearest candidate (the smallest worst MDE / target) still lacks, for an
    ability none decides."""
    roomy = [r for r in rows if r["items"] <= r["room"]]
    if not roomy:
        return f"its pool leaves {max(r['room'] for r in rows)} test items at the candidates' n"
    gaps = [[_gap(r, axis, t) for axis, t in targets.items()] for r in roomy]
    top = roomy[min(range(len(roomy)), key=lambda i: (max(gaps[i]), sum(gaps[i])))]
    short = [
        f"mde_{axis} {top[f'mde_{axis}']} > {t:g}"
        for axis, t in targets.items()
        if _gap(top, axis, t) > 1
    ]
    reach = [axis for axis in ("data", "size") if top.get(f"resistant_{axis}") is False]
    said = ", ".join(short) + (f"; resistant unreachable on {', '.join(reach)}" if reach else "")
    where = f"{top['items']} test items, {top['seeds']} seeds"
    return f"nearest: {where}: {said}"


def _gap(row: dict, axis: str, target: float) -> float:
    mde = row.get(f"mde_{axis}")
    return np.inf if mde is None else mde / target


def write_grid(c: Candidates, chosen, out: Path) -> Path:
    """The chosen design as a grid file (the candidate file's grid with its bases, n grid and
    seeds), checked by the grid's own parser before it is written."""
    from doit.grid.plan import parse_grid

    raw = read_yaml(c.grid)
    bases = chosen["bases"].split(",")
    raw["bases"] = [b for b in raw["bases"] if b["name"] in bases]
    ns = [int(n) for n in chosen["ns"].split(",")]
    per = raw["data"]["per_ability"]
    raw["data"]["per_ability"] = {**per, "values": ns} if isinstance(per, dict) else ns
    raw["seed"] = list(range(int(chosen["seeds"])))
    for key, axis in list(raw["data"].items()):
        if isinstance(axis, dict) and isinstance(axis.get("bases"), list):
            axis["bases"] = [b for b in axis["bases"] if b in bases]
            if not axis["bases"]:
                del raw["data"][key]
    parse_grid(raw, Path(c.grid))
    head = (
        f"# Written by doit analysis design from {c.grid}: design {chosen['design']}, cost "
        f"{chosen['cost']:g} {c.unit}, {chosen['decided']} abilities decided.\n"
        f"# It scores {chosen['items']} test items per ability: split the corpus with "
        f"`doit data split ... --test {chosen['items']}` and plan it with\n"
        f"#   doit grid plan {out / 'grid.yaml'} --out DIR --items {chosen['items']}\n"
    )
    path = out / "grid.yaml"
    atomic_write_text(path, head + yaml.safe_dump(raw, sort_keys=False))
    return path


def inputs_from(args):
    """(ability -> Inputs, ability -> source) from --pilot or the priors."""
    from doit.grid.results import read_items, read_results
    from doit.stats.pilot import last_epochs, pilot_inputs
    from doit.stats.planner import ability_inputs, parse_levels

    pilot = None
    if args.pilot:
        rows, items = read_results(args.pilot), read_items(args.pilot)
        pilot = pilot_inputs(
            last_epochs(rows), items, str(args.pilot), "test", args.seed_sd, args.design_effect
        )
    levels = parse_levels(args.score_levels)
    return ability_inputs(pilot, levels, args.item_corr, args.seed_sd, args.design_effect)


def run_design(args) -> int:
    """The command (module docstring)."""
    from doit.io import OutputKind, check_output, mark_output, marked_or_holding

    kind = OutputKind("design", holds=marked_or_holding("design", "designs.csv"))
    named = {"--candidates": args.candidates, "--pilot": args.pilot}
    check_output(
        args.out, kind, inputs={k: v for k, v in named.items() if v}, overwrite=args.overwrite
    )
    targets = parse_targets(args.mde, args.delta)
    c = read_candidates(args.candidates)
    by, said = inputs_from(args)
    if "policy" in targets and not c.policy:
        raise DesignError(f"{args.candidates}: policy: false, so no design has a curriculum MDE")
    designs, tables = evaluate(c, by, said, targets, args.delta)
    chosen = best(designs, args.max_cost)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mark_output(out, "design")
    _csv(designs, out / "designs.csv")
    pareto = designs[designs["pareto"]]
    _csv(pareto, out / "pareto.csv")
    print(
        f"targets: {', '.join(f'{k} mde <= {v:g}' for k, v in targets.items())}; "
        f"inputs: {sorted(set(said.values()))}"
    )
    print(pareto.to_string(index=False))
    if chosen is not None:
        _csv(pd.DataFrame(tables[chosen["design"]]), out / "best.csv")
        grid = write_grid(c, chosen, out)
        print(
            f"best within {args.max_cost:g} {c.unit}: {chosen['design']} (cost {chosen['cost']:g}, "
            f"{chosen['decided']} abilities decided): {grid}"
        )
    lines = unmet_lines(designs, tables, chosen, args.max_cost, c.unit, targets)
    for line in lines:
        print(line)
    return 2 if lines else 0


def _csv(frame: pd.DataFrame, path: Path) -> None:
    atomic_write_text(path, frame.to_csv(index=False))


def design_parser(sub) -> None:
    """``doit analysis design``'s flags."""
    s = sub.add_parser("design", help="the cheapest designs that decide the targets (design.py)")
    s.add_argument("--mde", required=True, help="targets, points: data=4,size=5,curriculum=6")
    s.add_argument("--candidates", required=True, type=Path, help="candidate axes (YAML)")
    s.add_argument("--max-cost", required=True, type=float, help="in the candidates' unit")
    s.add_argument("--out", required=True, type=Path, help="output folder")
    s.add_argument("--overwrite", action="store_true")
    s.add_argument("--pilot", type=Path, help="a finished study with per-item rows")
    s.add_argument("--seed-sd", type=float, help=f"prior, logit (default {V.SEED_SD_PRIOR})")
    s.add_argument(
        "--score-levels", help=f"points: one value or ability=p,... (default {V.SCORE_PRIOR:g})"
    )
    s.add_argument("--item-corr", type=float, help="prior (default 0)")
    s.add_argument("--design-effect", type=float, default=1.0, help="item clusters (default 1)")
    s.add_argument("--delta", type=float, default=DELTA, help=f"margin (default {DELTA:g})")
    s.set_defaults(step="design")
