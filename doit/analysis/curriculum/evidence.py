"""What the policies read from a study: the fitted curves of the target, the transfer shares, the
groups, the best observed n, the pools and bounds, the tokens an item costs, the mix points.

Everything is computed, and every problem raised as a `CurriculumError`, before anything is
written. The fits are the analysis's (`doit.analysis.pipeline.Analysis`) under the
``settings`` of ``Options`` (valid under the rule ``last`` by default, its formulation and cell
formulation included), so the test split stays untouched for the comparison of the policies.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from doit.analysis.curriculum.model import ScoreModel, transfer_shares
from doit.analysis.curriculum.options import (
    EXTRAPOLATE_BELOW,
    FURTHER,
    REACH,
    CurriculumError,
    Options,
)
from doit.analysis.fits import fit_series, fits_table, same_n_rows
from doit.analysis.pipeline import Analysis
from doit.data import abilities as ab
from doit.io import sha256_text


@dataclass
class Evidence:
    analysis: Analysis
    options: Options
    abilities: tuple[str, ...]
    target: str  # the target base's name, or "params=P"
    params: float
    model: ScoreModel
    pools: dict[str, int]
    lower: dict[str, int]
    upper: dict[str, int]
    tokens: dict[str, float]  # assistant tokens per item (NaN when the study lacks them)
    best_n: dict[str, int]  # the uniform n with the best observed score on the target
    trained_on: str = ""  # where the mixes are trained: the target, or --base under --fit-base
    notes: list[str] = field(default_factory=list)
    reach: dict[str, float] = field(default_factory=dict)  # ability -> x its largest observed n
    heldout: dict[str, float] = field(default_factory=dict)  # its held-out one-step error, points

    @property
    def weights(self) -> np.ndarray:
        return np.array([self.options.weights.get(a, 1.0) for a in self.abilities], float)

    @cached_property
    def groups(self) -> pd.DataFrame:
        return self.analysis.sensitivity.set_index("ability")

    @cached_property
    def fits_sha(self) -> str:
        return sha256_text(fits_table(self.analysis.curves).to_csv(index=False))[:16]

    @cached_property
    def mix_points(self):
        """The regression's data (`regression.MixPoints`); a CurriculumError without mixes."""
        return mix_points(self.analysis, self.target, self.abilities)

    def cost(self, counts: dict[str, int]) -> float:
        """What ``counts`` spend in the budget's unit."""
        return cost(self.options, self.tokens, counts)


def cost(options: Options, tokens: dict[str, float], counts: dict[str, int]) -> float:
    if options.unit == "items":
        return float(sum(counts.values()))
    return float(sum(n * tokens[a] for a, n in counts.items()))


def gather(source, options: Options) -> Evidence:
    """The evidence for a curriculum from the study (folder or table) at ``source`` analysed
    under ``options.settings``, or from an `Analysis` of it under those settings to reuse. The
    cheap checks (pools, bounds, budget) come before the fits."""
    a = source if isinstance(source, Analysis) else Analysis(str(source), options.settings)
    if a.settings != options.settings:
        raise ValueError(
            f"the Analysis reused ({a.settings}) is not under the curriculum's settings "
            f"({options.settings})"
        )
    table = a.table
    split = a.settings.split
    scored = table[(table["split"] == split) & table["score"].notna()]
    abilities = tuple(k for k in ab.ABILITY_KEYS if k in set(scored["ability"]))
    if not abilities:
        raise CurriculumError(f"{a.source}: no {split} scores of any ability to fit")
    pools = _pools(a.source, options, abilities)
    lower = {k: options.floors.get(k, 1) for k in abilities}
    upper = {k: int(min(pools.get(k, 0), options.caps.get(k, math.inf))) for k in abilities}
    for k in abilities:
        if lower[k] > upper[k]:
            raise CurriculumError(
                f"{k}: its floor {lower[k]} is above its pool or cap "
                f"{upper[k]}; lower --floors or raise --caps"
            )
    tokens = tokens_per_item(table, abilities)
    _check_budget(options, tokens, lower, upper)
    use = _use_transfer(table, options)
    target, params, model, said = score_model(a, abilities, options, use)
    ev = Evidence(
        a,
        options,
        abilities,
        target,
        params,
        model,
        pools,
        lower,
        upper,
        tokens,
        best_observed(a.counts, target, abilities),
        trained_on=_trained_on(a, options, target),
    )
    ev.reach, ev.heldout, reach_said = reach_of(a, target, abilities, options)
    ev.notes += said + reach_said + beyond_notes(a, options)
    return ev


def score_model(a: Analysis, abilities, options: Options, use: bool):
    """(target, params, the `ScoreModel` of ``a``'s fits on it, notes on its transfer term)."""
    target, params, curves = _target(a, abilities, options)
    xs = np.concatenate([f.x for f in curves.values()])
    bases = transfer_bases(a, target, options, use)
    shares = transfer_shares(a.counts, abilities, use and bool(bases), bases)
    model = ScoreModel(abilities, curves, shares, float(xs.max()), float(xs.min()))
    return target, params, model, transfer_notes(model, use, options, target, bases)


def refit(ev: Evidence, a: Analysis) -> Evidence:
    """``ev`` with its score model (and best observed n) refitted on the analysis ``a`` of the
    same study (a half of its items: the cross-fit), its bounds and reach kept."""
    use = _use_transfer(a.table, ev.options)
    _, _, model, _ = score_model(a, ev.abilities, ev.options, use)
    best = best_observed(a.counts, ev.target, ev.abilities)
    return dataclasses.replace(ev, analysis=a, model=model, best_n=best, notes=[])


def transfer_bases(a: Analysis, target: str, options: Options, use: bool) -> tuple[str, ...]:
    """The bases whose leave-one-out cells T_a is measured on: the target's, or
    ``--transfer-from``'s; () when neither has any (another base's are refused unless named)."""
    if not use:
        return ()
    t = a.table
    loo = set(t.loc[t["excluded_ability"].notna(), "base"])
    if options.transfer_from is not None:
        if options.transfer_from not in loo:
            raise CurriculumError(
                f"--transfer-from {options.transfer_from}: that base has no leave-one-out cells "
                f"(bases with them: {', '.join(sorted(loo)) or 'none'})"
            )
        return (options.transfer_from,)
    if target in loo:
        return (target,)
    if options.transfer == "on":
        raise CurriculumError(
            f"--transfer on: the leave-one-out cells are on {', '.join(sorted(loo))}, not on the "
            f"target {target}; add data.loo on {target} to the grid, or name the base with "
            "--transfer-from BASE (the transfer is then measured there and applied here)"
        )
    return ()


def reach_of(a: Analysis, target: str, abilities, options: Options):
    """(ability -> its reach, ability -> its held-out one-step error on the target (NaN: none),
    notes): ``--reach`` for every ability when given, else REACH, or FURTHER for an ability
    whose held-out largest-n prediction on the target missed by < EXTRAPOLATE_BELOW points."""
    held = a.predictions if target in set(a.counts.points["base"]) else None
    error = dict.fromkeys(abilities, np.nan)
    if held is not None:
        rows = held[(held["holdout"] == "largest_n") & (held["base"] == target)]
        error.update(rows.groupby("ability")["abs_error"].mean().to_dict())
    if options.reach is not None:
        return dict.fromkeys(abilities, float(options.reach)), error, []
    further = [k for k in abilities if error[k] < EXTRAPOLATE_BELOW]
    reach = {k: FURTHER if k in further else REACH for k in abilities}
    said = (
        f"evidence-bounded: counts within {REACH:g} x the largest observed n, "
        f"{FURTHER:g} x for the abilities whose held-out one-step prediction on {target} "
        f"missed by < {EXTRAPOLATE_BELOW:g} points"
    )
    said += ": " + ", ".join(f"{k} ({error[k]:.1f})" for k in further) if further else ": none did"
    return reach, {k: float(v) for k, v in error.items()}, [said]


def beyond_notes(a: Analysis, options: Options) -> list[str]:
    """A warning when --params lies beyond the study's largest base, with the held-out
    largest-base prediction error of the same fits beside it."""
    if options.params is None:
        return []
    largest = float(a.counts.points["params"].astype(float).max())
    if options.params <= largest:
        return []
    held = a.predictions[a.predictions["holdout"] == "largest_base"]
    error = (
        f"the held-out largest-base prediction error of these fits is "
        f"{held['abs_error'].mean():.1f} points (mean absolute, {len(held)} cells)"
        if len(held)
        else "no held-out largest-base error: that needs >= 3 bases"
    )
    return [
        f"--params {options.params:g} is beyond the largest base ({largest:g}): the curves "
        f"are extrapolated in size; {error}"
    ]


def _trained_on(a: Analysis, options: Options, target: str) -> str:
    """Where the mixes train: ``--base`` (default the study's largest) under ``--fit-base``,
    else the target itself; a CurriculumError for a --base the study lacks."""
    if options.fit_base is None:
        return target
    bases = grid_bases(a)
    base = options.base or bases.idxmax()
    if base not in bases.index:
        raise CurriculumError(
            f"--base {base!r} is not in the study (bases: {', '.join(sorted(bases.index))})"
        )
    return base


def grid_bases(a: Analysis) -> pd.Series:
    """base -> params of the study's bases with uniform cells (what the curves are fitted on);
    a CurriculumError when it has none."""
    pts = a.counts.points
    grid = pts[same_n_rows(pts)]
    bases = grid.drop_duplicates("base").set_index("base")["params"].astype(float)
    if bases.empty:
        raise CurriculumError(
            "the study has no uniform cells (n items of every ability) to fit "
            "curves on; add data.per_ability to its grid"
        )
    return bases


def _target(a: Analysis, abilities, options: Options):
    """(target name, params, curves per ability) for --fit-base, --base or --params (the base
    whose curves choose)."""
    bases = grid_bases(a)
    if options.params is not None:
        if options.fit_base is not None:
            raise CurriculumError("--fit-base chooses on a base of the study: not with --params")
        return _by_params(a, abilities, float(options.params), bases)
    base = options.fit_base or options.base or bases.idxmax()
    if base not in bases.index:
        raise CurriculumError(
            f"base {base!r} is not in the study (bases: "
            f"{', '.join(bases.index)}); give one of them, or --params P for "
            "a base outside it"
        )
    curves = {}
    for k in abilities:
        fit = a.curves.data.get((k, base, "curated"))
        if fit is None:
            raise CurriculumError(
                f"{k} has no data fit on base {base} (it needs >= 2 distinct "
                f"n > 0 with {a.settings.split} scores); add n to the grid"
            )
        curves[k] = fit
    return base, float(bases[base]), curves


def _by_params(a: Analysis, abilities, params: float, bases: pd.Series):
    """Curves at a base of ``params`` outside the study: each grid n's size fit evaluated at
    ``params`` (point and replicates), refitted over n as pseudo-counts of the same items."""
    if len(bases) < 2 or not a.curves.size:
        raise CurriculumError("--params needs size fits (>= 2 bases at one n); give --base instead")
    counts, curves = a.counts, {}
    for k in abilities:
        series = sorted((n, f) for (ab_, n), f in a.curves.size.items() if ab_ == k)
        if len(series) < 2:
            raise CurriculumError(f"{k} has size fits at {len(series)} n; --params needs >= 2")
        ns = np.array([n for n, _ in series], float)
        m = np.array([counts.points.loc[f.columns, "m"].mean() for _, f in series])
        point = np.array([f.curve([params])[0][0] for _, f in series]) / 100
        reps = [f.curve([params])[1] for _, f in series]
        k_reps = None if reps[0] is None else np.column_stack([r[:, 0] for r in reps]) / 100 * m
        m_reps = None if k_reps is None else np.broadcast_to(m, k_reps.shape).copy()
        chance = series[0][1].chance
        curves[k] = fit_series(ns, point * m, m, chance, k_reps, m_reps)
    return f"params={params:g}", params, curves


def _use_transfer(table: pd.DataFrame, options: Options) -> bool:
    has_loo = bool(table["excluded_ability"].notna().any())
    if options.transfer == "on" and not has_loo:
        raise CurriculumError(
            "--transfer on needs leave-one-ability-out cells: add data.loo "
            "[n] to the grid (doit/grid/README.md), or --transfer auto|off"
        )
    return has_loo and options.transfer != "off"


def transfer_notes(model: ScoreModel, use: bool, options: Options, target="", bases=()) -> list:
    if not use or not bases:
        why = (
            "--transfer off"
            if options.transfer == "off"
            else "the study has no leave-one-out cells"
            if not use
            else f"the leave-one-out cells are not on the target {target}; --transfer-from "
            "BASE would use another base's"
        )
        return [f"transfer ignored ({why}): S_a = U_a(n_a), the uniform-grid curve alone"]
    ignored = [f"{a} ({t.note})" for a, t in model.transfer.items() if t.note]
    where = (
        f" measured on {bases[0]}, applied to {target} (--transfer-from)"
        if bases[0] != target
        else f" measured on {target}"
    )
    return [
        f"transfer term g_a for {len(model.abilities) - len(ignored)} abilities{where}, "
        "anchored on the untuned base"
    ] + ([f"T_a = 0 for {', '.join(ignored)}"] if ignored else [])


def _pools(source: str, options: Options, abilities) -> dict[str, int]:
    """Pools from --pools, else the corpus (--data, or the study's grid's doit_dir)."""
    if options.pools is not None:
        return {k: int(options.pools.get(k, 0)) for k in abilities}
    data = options.data or _grid_corpus(source)
    if data is not None and not options.data and not Path(data).is_dir():
        raise CurriculumError(
            f"the grid's doit_dir {data} (in {Path(source) / 'plan.json'}) was not found from "
            f"{Path.cwd()}: run from where the study was planned, or give --data DOIT_DIR"
        )
    if data is None:
        raise CurriculumError(
            "no pools: give --data DOIT_DIR (the corpus the mix draws from) or "
            "--pools ability=n,..."
        )
    from doit.data.cells import pool_sizes
    from doit.data.load import load_items

    try:
        return pool_sizes(load_items(data, options.pool))
    except (ValueError, OSError) as e:
        first = str(e).splitlines()[0]
        raise CurriculumError(f"pools from {data} (--pool {options.pool}): {first}") from None


def _grid_corpus(source: str) -> str | None:
    """The corpus of the grid a study folder was planned from (as the grid wrote it)."""
    from doit.grid.plan import PLAN, read_plan

    if not (Path(source) / PLAN).is_file():
        return None
    return read_plan(source).grid.doit_dir


def tokens_per_item(table: pd.DataFrame, abilities) -> dict[str, float]:
    """Each ability's assistant tokens per training item and epoch (``tokens_own`` / (``n_own``
    x epoch), the mean over the cells that trained on it); NaN without those columns."""
    rows = table[
        (table["n_own"].astype("Float64") > 0).fillna(False)
        & (table["epoch"].astype(float) > 0)
        & table["tokens_own"].notna()
    ]
    rows = rows.drop_duplicates(["cell", "epoch", "ability"])
    per = rows["tokens_own"].astype(float) / (rows["n_own"].astype(float) * rows["epoch"])
    mean = per.groupby(rows["ability"]).mean()
    return {k: float(mean.get(k, np.nan)) for k in abilities}


def best_observed(counts, base: str, abilities) -> dict[str, int]:
    """Per ability, the uniform n with its highest observed score on ``base`` (the smallest n
    on ties); the largest base's when the target is not in the study."""
    pts = counts.points[same_n_rows(counts.points)]
    if base not in set(pts["base"]):
        base = pts.sort_values("params")["base"].iloc[-1]
    out = {}
    for k in abilities:
        own = pts[(pts["base"] == base) & (pts["ability"] == k)]
        if len(own):
            own = own.assign(n=own["n_per_ability"].astype(float)).sort_values("n")
            out[k] = int(own.loc[own["score"].astype(float).idxmax(), "n"])
    return out


def cell_counts(selected: pd.DataFrame) -> dict[str, dict[str, float]]:
    """cell -> ability -> training items: ``n_own``, else (tables without it) a uniform or
    leave-one-out cell's n; a cell whose counts are unknown is left out."""
    out: dict[str, dict[str, float]] = {}
    rows = selected.drop_duplicates(["cell", "ability"])
    for r in rows.itertuples():
        if r.construction not in ("curated", "mix"):
            continue
        if pd.notna(r.n_own):
            n = float(r.n_own)
        elif r.construction == "curated" and pd.notna(r.n_per_ability):
            n = 0.0 if r.excluded_ability == r.ability else float(r.n_per_ability)
        else:
            continue
        out.setdefault(r.cell, {})[r.ability] = n
    return out


def mix_points(a: Analysis, base: str, abilities):
    """Every trained cell of ``base`` with known counts, as the regression's data: points of
    the bootstrap (seeds pooled), their counts, scores and replicate scores."""
    from doit.analysis.curriculum.regression import MixPoints

    pts = a.counts.points
    known = cell_counts(a.selected)
    rows = pts[(pts["base"] == base) & pts["construction"].isin(["curated", "mix"])]
    labels, X, y, reps, mixes = [], [], [], [], 0
    for cells, block in rows.groupby("cells", sort=True):
        first = cells.split(",")[0]
        block = block.set_index("ability")
        if first not in known or not set(abilities) <= set(block.index):
            continue
        cols = [
            int(np.flatnonzero((pts["cells"] == cells) & (pts["ability"] == k))[0])
            for k in abilities
        ]
        labels.append(first)
        X.append([known[first].get(k, 0.0) for k in abilities])
        scores = a.counts.scores(cols)
        y.append(scores.point)
        reps.append(scores.reps)
        mixes += int(block["construction"].iloc[0] == "mix")
    if not mixes or len(X) < len(abilities) + 2:
        raise CurriculumError(
            f"regression needs random-mix cells on base {base} ({mixes} mix "
            f"cells, {len(X)} cells with known counts; >= {len(abilities) + 2} "
            "with >= 1 mix): add data.random_mixes {count: 24, total: BUDGET} "
            "to the grid (doit/grid/README.md)"
        )
    return MixPoints(
        abilities, np.array(X, float), np.array(y, float), np.stack(reps, axis=1), mixes, labels
    )


def _check_budget(o: Options, tokens: dict, lower: dict, upper: dict) -> None:
    if o.unit == "tokens":
        missing = [k for k, t in tokens.items() if not np.isfinite(t)]
        if missing:
            raise CurriculumError(
                f"--unit tokens needs the study's tokens per item (tokens_own, "
                f"n_own), missing for {', '.join(missing)}; use --unit items"
            )
    low, high = cost(o, tokens, lower), cost(o, tokens, upper)
    if o.budget < low:
        raise CurriculumError(
            f"--budget {o.budget} is below the floors' sum {low:g} ({o.unit}); "
            "raise --budget or lower --floors"
        )
    if o.budget > high:
        raise CurriculumError(
            f"--budget {o.budget} is above what the pools (and caps) hold, "
            f"{high:g} {o.unit}; lower --budget, raise --caps or use a larger "
            "--pool"
        )
