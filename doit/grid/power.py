"""What a grid can decide before it trains (`doit grid plan`, issue #31): its shape, the scored
items per ability and the variance inputs, turned into `doit.stats.planner`'s table.

- **shape**: the bases' ``params``, ``data.per_ability`` (the uniform n grid), the grid's
  training seeds; a policy row when the grid has ``loo`` or ``mix`` cells;
- **items** per ability: ``--items N``, else the corpus's test files counted, else (``--no-check``
  or no corpus) the dataset card's test count (``data/doit/expected.yaml``);
- **inputs** per ability: ``--pilot STUDY`` (`doit.stats.pilot`: each cell's last scored
  epoch), then the priors for what the pilot lacks: ``--score-levels`` (points; one value or
  ``ability=p,...``; default `variance.SCORE_PRIOR`), ``--item-corr`` (default 0: no pairing
  gain), ``--seed-sd`` (logit; default `variance.SEED_SD_PRIOR`, the micro models' measured value)
  and ``--design-effect`` (clustered items; default 1).
"""

from __future__ import annotations

from pathlib import Path

from doit.data import abilities as ab
from doit.data.layout import ability_from_name, count_records, split_files
from doit.grid.plan import PlanError
from doit.grid.spec import Axis, Grid
from doit.stats import variance as V
from doit.stats.pilot import PilotError, last_epochs, pilot_inputs
from doit.stats.planner import ability_inputs, card_items, format_rows, parse_levels, power_rows
from doit.stats.power import DELTA
from doit.train import rundir


def corpus_counts(doit_dir) -> dict[str, int]:
    """Test items per in-domain ability in the corpus's test files ({} without any)."""
    counts = {}
    for path in split_files(Path(doit_dir), "test"):
        ability = ability_from_name(path)
        if ability in ab.ABILITY_KEYS:
            counts[ability] = count_records(path)
    return counts


def grid_shape(grid: Grid, items: int, seeds: int | None = None) -> V.Shape:
    """The grid's uniform design: bases with params, ``data.per_ability``, its seeds."""
    axis = grid.data.get("per_ability")
    if not isinstance(axis, Axis) or not axis.values:
        raise PlanError(f"{grid.path}: data.per_ability: a power plan needs the uniform n grid")
    if not (seeds or grid.seeds):
        raise PlanError(f"{grid.path}: seed: no training seeds, nothing to plan power for")
    bases = {b.name: base_params(b) for b in grid.bases}
    unknown = [name for name, params in bases.items() if params is None]
    if unknown:
        raise PlanError(
            f"{grid.path}: bases: {unknown[0]}: params unknown (set params, or build the base "
            "first: a built base's own count is read)"
        )
    return V.Shape(bases, tuple(sorted(axis.values)), items, seeds or len(grid.seeds))


def base_params(base) -> float | None:
    """A base's non-embedding parameters: the grid's ``params``, else a built base's own count
    (its pretraining DONE, as the results table reads it), else None."""
    if base.params is not None:
        return float(base.params)
    built = (rundir.read_done(base.resolved) or {}).get("params_non_embedding")
    return None if built is None else float(built)


def unplannable(grid: Grid) -> str | None:
    """Why the grid's power cannot be planned (None when it can): no uniform n grid, or a base
    whose params the grid does not give (a base the grid pretrains)."""
    try:
        grid_shape(grid, 1)
    except PlanError as e:
        return str(e)
    return None


def has_policy(grid: Grid) -> bool:
    return any(k in grid.data for k in ("loo", "mix", "random_mixes"))


def read_pilot(study, seed_sd, design_effect) -> dict[str, tuple[V.Inputs, dict]]:
    """The pilot's inputs per ability (`doit.stats.pilot`), each cell's last scored epoch."""
    from doit.grid.results import ResultsError, read_items, read_results

    try:
        rows, items = read_results(study), read_items(study)
        return pilot_inputs(last_epochs(rows), items, str(study), "test", seed_sd, design_effect)
    except (ResultsError, PilotError, OSError) as e:
        raise PlanError(str(e).splitlines()[0]) from None


def plan_power(grid: Grid, a, checked: bool) -> dict:
    """plan.json's ``power``: the table's rows and what they rest on, from the plan flags."""
    if a.items:
        counts, items_from = {k: a.items for k in ab.ABILITY_KEYS}, "--items"
    else:
        counts = corpus_counts(grid.doit_dir) if checked else {}
        items_from = "the corpus's test files"
        if not counts:
            counts, items_from = card_items()[0], "the dataset card (data/doit/expected.yaml)"
    pilot = read_pilot(a.pilot, a.seed_sd, a.design_effect) if a.pilot else None
    try:
        levels = parse_levels(a.score_levels)
    except ValueError as e:
        raise PlanError(str(e)) from None
    by, said = ability_inputs(pilot, levels, a.item_corr, a.seed_sd, a.design_effect)
    items = sorted(set(counts.values()))
    rows = []
    for m in items:  # abilities grouped by their item count (one shape each)
        mine = {k: v for k, v in by.items() if counts.get(k) == m}
        shape = grid_shape(grid, m)
        try:
            rows += power_rows(shape, mine, said, a.delta, has_policy(grid))
        except ValueError as e:
            raise PlanError(str(e)) from None
    budget = a.budget or max(grid.data["per_ability"].values) * len(ab.ABILITY_KEYS)
    return {
        "delta": a.delta,
        "items_from": items_from,
        "pilot": str(a.pilot) if a.pilot else None,
        "policy_budget": budget if has_policy(grid) else None,
        "rows": rows,
    }


def describe(power: dict) -> str:
    """The plan's power table and the lines saying what it rests on."""
    lines = [format_rows(power["rows"], power.get("delta", DELTA))]
    lines.append(f"items per ability from {power['items_from']}")
    if power.get("policy_budget"):
        lines.append(
            f"mde_policy: a policy's mix vs uniform at one base, budget {power['policy_budget']} "
            "items (macro: the in-domain mean)"
        )
    return "\n".join(lines)
