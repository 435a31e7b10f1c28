"""A curriculum from a study: the evidence, every asked policy's allocation, and their predicted
scores with CIs (``make``), before anything is trained.

Every allocation is predicted by the model behind it (the fitted curves for uniform,
reconstruct, maximum and marginal; the regressed law for regression), and its gain over
uniform by the same model at uniform's allocation, replicate by replicate (the analysis's paired
item bootstrap), so a gain has a CI of its own. ``table`` is curriculum.csv (columns in
README.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from doit.analysis.bootstrap import interval
from doit.analysis.curriculum import crossfit, policies
from doit.analysis.curriculum.evidence import Evidence, gather, refit
from doit.analysis.curriculum.options import CurriculumError, Options

COLUMNS = [
    "policy",
    "ability",
    "n",
    "share",
    "tokens",
    "extrapolated",
    "predicted",
    "predicted_lo",
    "predicted_hi",
    "gain",
    "gain_lo",
    "gain_hi",
    "model",
    "equal_budget",
    "target",
    "budget",
    "unit",
    "rule",
    "split",
    "resamples",  # what the intervals resample (bootstrap.Counts.resamples)
    "predicted_from",  # cross-fitted or plug-in, and the trained runs' noise (crossfit.py)
]
MACRO = "macro"  # the weighted macro row of every policy
# the columns a macro row is shown with (the CLI's printout, the report's table)
MACRO_VIEW = [
    "policy",
    "n",
    "tokens",
    "predicted",
    "predicted_lo",
    "predicted_hi",
    "gain",
    "gain_lo",
    "gain_hi",
    "model",
    "equal_budget",
]


@dataclass
class Result:
    evidence: Evidence
    allocations: dict[str, policies.Allocation]
    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def options(self) -> Options:
        return self.evidence.options

    @property
    def baseline(self) -> policies.Allocation:
        """The allocation every other is compared with (uniform's)."""
        return self.allocations[policies.baseline().name]


def make(source, options: Options) -> Result:
    """Every policy of ``options.policies`` (the baseline, uniform, always) with predictions and
    CIs, in the registry's run order; ``source``: a study folder or results table, or an
    `Analysis` of one to reuse (`evidence.gather`)."""
    order = policies.run_order(options.policies)  # an unknown name before anything is read
    ev = gather(source, options)
    if not ev.weights.sum() > 0:
        raise CurriculumError(
            "--weights: every weight is 0: the macro they weight is undefined; "
            "give an ability a weight > 0"
        )
    allocations = {p.name: p.allocate(ev) for p in order}
    crossed, said = cross_fitted(ev, allocations)
    table = predictions(ev, allocations, crossed)
    notes = [*ev.notes, *(f"{p}: {n}" for p, a in allocations.items() for n in a.notes), *said]
    return Result(ev, allocations, table, notes)


def cross_fitted(ev: Evidence, allocations: dict) -> tuple[dict, list[str]]:
    """policy -> (point (K,), reps, uniform's point, reps) of every allocation chosen from the
    fits (``Policy.crossfit``), chosen on one half of the items and predicted by the other's
    curves, the mean of both directions (`crossfit`); notes."""
    chosen = [p for p in allocations if policies.get(p).crossfit]
    if not (ev.options.crossfit and chosen):
        return {}, []
    parts = crossfit.halves(ev.analysis)
    if parts is None:
        return {}, [f"plug-in predicted gains ({', '.join(chosen)}): no per-item rows to halve"]
    halves = [refit(ev, h) for h in parts]
    base = allocations[policies.baseline().name].counts
    out = {}
    for name in chosen:
        both = []
        for mine, other in ((halves[0], halves[1]), (halves[1], halves[0])):
            counts = policies.get(name).build(mine).counts
            both.append((*other.model.predict(counts), *other.model.predict(base)))
        out[name] = tuple(
            None if x is None or y is None else (x + y) / 2 for x, y in zip(*both, strict=True)
        )
    return out, [
        f"{', '.join(chosen)}: predicted macro and gain {crossfit.CROSSFIT} (chosen on one, "
        "predicted by the other's curves, both ways; the mix written is chosen on all items, "
        "and its ability rows are predicted at its counts by the fits of every item)"
    ]


def predictions(ev: Evidence, allocations: dict, crossed: dict | None = None) -> pd.DataFrame:
    """curriculum.csv: a row per policy and ability, and a macro row per policy; ``crossed``:
    the cross-fitted predictions of the policies that have them (`cross_fitted`).

    An ability row predicts the written count (its ``n``) by the fits of every item; a
    cross-fitted policy's macro row (its score and gain, the mixes' provenance) is the
    cross-fit's: the gain of choosing this way. Its halves may choose other counts than the
    written ones (studies/curriculum_micro: biology 118 and 256), so their per-ability
    predictions are of other mixes and are not written."""
    crossed = crossed or {}
    baseline = {}  # model -> the baseline's prediction under it
    base_counts = allocations[policies.baseline().name].counts
    rows = []
    w = ev.weights / ev.weights.sum()
    noise = _ArmNoise(ev, base_counts)
    for stream, alloc in enumerate(allocations.values()):
        model = alloc.model
        if id(model) not in baseline:
            baseline[id(model)] = model.predict(base_counts)
        written = (*model.predict(alloc.counts), *baseline[id(model)])
        trained = "; a training seed per arm and the held-out extrapolation error"
        how = (crossfit.CROSSFIT if alloc.policy in crossed else crossfit.PLUG_IN) + trained
        point, reps, base_pt, base_reps = noise.add(alloc, written, stream)
        for i, k in enumerate(ev.abilities):
            n = alloc.counts[k]
            gain = (point[i] - base_pt[i], _diff(reps, base_reps, i))
            extrapolated = model.extrapolated(k, n)
            scored = (point[i], _col(reps, i), *gain, crossfit.PLUG_IN + trained)
            rows.append(_row(ev, alloc, k, n, extrapolated, *scored))
        if alloc.policy in crossed:
            point, reps, base_pt, base_reps = noise.add(alloc, crossed[alloc.policy], stream)
        macro_reps = None if reps is None else reps @ w
        gain_reps = None if reps is None or base_reps is None else (reps - base_reps) @ w
        extrapolated = any(r["extrapolated"] for r in rows[-len(w) :])
        total = sum(alloc.counts.values())
        macro = (float(point @ w), macro_reps, float((point - base_pt) @ w), gain_reps)
        rows.append(_row(ev, alloc, MACRO, total, extrapolated, *macro, how))
    return pd.DataFrame(rows, columns=COLUMNS)


class _ArmNoise:
    """What the trained runs add to predicted replicates (`crossfit.arm_noise`): a seed draw
    per arm, the held-out extrapolation error; the baseline's one draw per replicate count (the
    curves' models and regression's bootstrap may have different numbers of replicates)."""

    def __init__(self, ev: Evidence, base_counts: dict):
        self.ev, self.base_counts, self.base = ev, base_counts, {}

    def add(self, alloc, predicted, stream: int):
        point, reps, base_pt, base_reps = predicted
        if reps is None:
            return predicted
        r = len(reps)
        if r not in self.base:
            self.base[r] = crossfit.arm_noise(self.ev, self.base_counts, base_pt, r, 0)
        if alloc.policy == policies.baseline().name:
            mine = self.base[r]
        else:
            mine = crossfit.arm_noise(self.ev, alloc.counts, point, r, stream)
        base_reps = None if base_reps is None else base_reps + self.base[r]
        return point, reps + mine, base_pt, base_reps


def _col(reps, i):
    return None if reps is None else reps[:, i]


def _diff(reps, base, i):
    return None if reps is None or base is None else reps[:, i] - base[:, i]


def _row(ev, alloc, ability, n, extrapolated, point, reps, gain, gain_reps, how) -> dict:
    total = sum(alloc.counts.values())
    tokens = (
        sum(c * ev.tokens[k] for k, c in alloc.counts.items())
        if ability == MACRO
        else n * ev.tokens[ability]
    )
    lo, hi = interval(point, reps) if reps is not None else (np.nan, np.nan)
    g_lo, g_hi = interval(gain, gain_reps) if gain_reps is not None else (np.nan, np.nan)
    o = ev.options
    return {
        "policy": alloc.policy,
        "ability": ability,
        "n": int(n),
        "share": n / total if total else np.nan,
        "tokens": tokens,
        "extrapolated": bool(extrapolated),
        "predicted": point,
        "predicted_lo": lo,
        "predicted_hi": hi,
        "gain": gain,
        "gain_lo": g_lo,
        "gain_hi": g_hi,
        "model": alloc.model.label,
        "equal_budget": alloc.equal_budget,
        "target": ev.target,
        "budget": o.budget,
        "unit": o.unit,
        "rule": o.settings.rule,
        "split": o.settings.split,
        "resamples": ev.analysis.counts.resamples,
        "predicted_from": how,
    }
