"""Grading a reference study against the micro world's levers (issue #30).

A reference study fits its sensitivities and classes over one architecture's size ladder (the
vanilla bases: ``Settings(bases=...)``) and compares other architectures at one size only in
paired differences. Given its `Analysis` objects and the corpus's ``ground_truth.json``, this
module computes what `studies/micro_reference/README.md` reports:

- `dose_recovery`: the Spearman of ``half_rise_n`` with the planted ``dose`` over the
  learnable abilities (log of both: the same ranks), its interval over the replicates of the
  half-rise n (items, and seeds where a point has >= 2); a curve (or a replicate's) that is
  not halfway inside the grid ranks above every n inside it (``beyond_grid``: those points);
- `classes_decided`: per axis, the abilities whose class is responsive, resistant or harmed;
- `bounds`: every point's score and every fitted curve's ceiling against the formulation's
  planted ceiling (contradicted: rejected at family-wise 5%, Holm), each fitted floor beside the
  planted chance floor (reported: chance is not a bound);
- `plateaus`: each non-learnable ability's best point against its planted ceiling;
- `architecture_differences`: per ability and macro, score(other) - score(reference base) at
  each n and averaged over the trained n, paired over items and seeds (`bootstrap.Counts`);
- `split_half`: the sensitivities of two disjoint seed sets, standardised difference
  |a - b| / sqrt(se_a^2 + se_b^2) (se: each half's replicate SD; `estimates`, `agreement`);
- `against_reference`: a smaller study's (the demo's) data classes against the reference's,
  and its sensitivities against the reference's fits restricted to its bases and n.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from doit.analysis.bootstrap import Estimate, Z, mean_over
from doit.analysis.features import rank_correlations
from doit.analysis.sensitivity import AXES, HALF_RISE, HARMED, RESISTANT, RESPONSIVE, reaching
from doit.analysis.study import StudyRows
from doit.data import abilities as ab

DECIDED = (RESPONSIVE, RESISTANT, HARMED)
MACRO = "macro"
OVER_N = "mean over n > 0"  # the n column of a difference averaged over the trained n


def truth_of(ground_truth: dict, formulation: str) -> pd.DataFrame:
    """One row per ability: dose, learnable, needs_pretrained_facts and the formulation's
    floor and ceiling (points), from a ground_truth.json with levers (a KeyError naming the
    key for an old corpus without them)."""
    levers, bounds = ground_truth["abilities"], ground_truth["formulations"][formulation]
    rows = [
        {
            "ability": a,
            "dose": float(v["dose"]),
            "learnable": bool(v["learnable"]),
            "needs_pretrained_facts": bool(v["needs_pretrained_facts"]),
            "floor": float(bounds[a]["floor"]),
            "ceiling": float(bounds[a]["ceiling"]),
        }
        for a, v in levers.items()
    ]
    return pd.DataFrame(rows)


def dose_recovery(curves, truth: pd.DataFrame) -> dict:
    """Spearman of half_rise_n with dose over the learnable abilities (module docstring):
    ``spearman``, ``_lo``, ``_hi``, ``abilities`` (those with a fitted data curve), the
    per-ability ``half_rise`` points (inf: beyond the grid), ``beyond_grid`` and
    ``replicates`` (how many gave a correlation)."""
    learnable = truth[truth["learnable"]].set_index("ability")["dose"]
    points, reps = {}, {}
    for a in learnable.index:
        fits = [f for k, f in curves.data.items() if k[0] == a and k[2] == "curated"]
        point, rep = reaching(fits, HALF_RISE)
        if fits and rep is not None:  # not halfway inside the grid: beyond it (ranks last)
            points[a] = np.inf if np.isnan(point) else point
            reps[a] = np.where(np.isnan(rep), np.inf, rep)
    out = {"abilities": sorted(points), "half_rise": points}
    out["beyond_grid"] = sorted(a for a, v in points.items() if np.isinf(v))
    out.update(spearman=np.nan, spearman_lo=np.nan, spearman_hi=np.nan, replicates=0)
    dose = learnable[out["abilities"]].to_numpy(float)
    if len(points) < 3 or len(set(dose)) < 2:
        return out
    x = np.array([points[a] for a in out["abilities"]])
    rho = float(rank_correlations(x[None], dose)[0])  # ranks: log n and log dose alike
    rep_rho = rank_correlations(np.column_stack([reps[a] for a in out["abilities"]]), dose)
    lo, hi = Estimate(rho, rep_rho).interval()
    out.update(spearman=rho, spearman_lo=lo, spearman_hi=hi)
    out["replicates"] = int(np.isfinite(rep_rho).sum())
    return out


def classes_decided(sensitivity: pd.DataFrame) -> dict:
    """Per axis: the abilities whose class is decided (responsive, resistant or harmed), and
    ``of``, how many abilities the table holds."""
    out = {"of": len(sensitivity)}
    for axis in AXES:
        decided = sensitivity[sensitivity[f"{axis}_class"].isin(DECIDED)]
        out[axis] = sorted(decided["ability"])
    return out


FAMILY_LEVEL = 0.05  # the bound checks' family-wise error (Holm over every ceiling check)
CHANCE = "chance"  # a floor row's bound: the planted chance floor, reported beside, not a bound


def bounds(counts, fits: pd.DataFrame, truth: pd.DataFrame, level=FAMILY_LEVEL) -> pd.DataFrame:
    """One row per checked quantity, with its value, 95% interval (``lo``, ``hi``) and
    ``beyond`` (that interval wholly past the planted value):

    - every point's score and every fitted data curve's ceiling against the planted
      **ceiling**, the best any model can reach: a bound. ``p`` is one-sided (normal, the SE
      read off the interval's lower side, so ``beyond`` is p < 0.025) and ``contradicted`` is
      Holm's step-down at family-wise ``level`` over all the study's ceiling checks. A study
      checks a hundred points or more; at 95% each, a world exactly at its bounds is flagged
      somewhere by chance (tests/analysis/test_reference.py measures how often);
    - every fitted data curve's floor beside the planted **chance** floor (bound ``chance``):
      what a model without information scores in expectation, not a bound. An untuned base
      may rank golds below chance as well as above it, so ``beyond`` (below chance) is
      reported and never ``contradicted``."""
    planted = truth.set_index("ability")
    rows = []
    pts = counts.points
    for i in range(len(pts)):
        a = str(pts["ability"].iloc[i])
        if a not in planted.index:
            continue
        what = f"score {pts['base'].iloc[i]} n={pts['n_per_ability'].iloc[i]}"
        rows.append(
            _bound_row(a, what, "ceiling", planted.loc[a, "ceiling"], *counts.score(i).ci())
        )
    for f in fits[(fits["axis"] == "data") & fits["chosen"].astype(bool)].itertuples():
        if f.ability not in planted.index:
            continue
        what = f"fit {f.base} {f.form}"
        for bound, col in ((CHANCE, "floor"), ("ceiling", "ceiling")):
            value, lo, hi = (getattr(f, c) for c in (col, f"{col}_lo", f"{col}_hi"))
            rows.append(
                _bound_row(f.ability, what, bound, planted.loc[f.ability, col], value, lo, hi)
            )
    table = pd.DataFrame(rows)
    if len(table):
        table["contradicted"] = holm(table["p"].to_numpy(float), level)
    return table


def _bound_row(ability, what, bound, planted, value, lo, hi) -> dict:
    p = np.nan
    if bound == CHANCE:
        beyond = hi < planted
    else:
        beyond, se = lo > planted, (value - lo) / Z
        if np.isfinite(se) and se > 0:
            p = float(stats.norm.sf((value - planted) / se))
    keys = ("ability", "quantity", "bound", "planted", "value", "lo", "hi", "beyond", "p")
    return dict(zip(keys, (ability, what, bound, planted, value, lo, hi, bool(beyond), p)))


def holm(p: np.ndarray, level: float) -> np.ndarray:
    """Holm's step-down: which of the p-values (NaN: not a test) are rejected at family-wise
    error ``level`` over all the finite ones."""
    p = np.asarray(p, float)
    tested = np.flatnonzero(np.isfinite(p))
    order = tested[np.argsort(p[tested], kind="stable")]
    rejected = np.zeros(len(p), bool)
    for i, j in enumerate(order):
        if p[j] > level / (len(order) - i):
            break
        rejected[j] = True
    return rejected


def plateaus(counts, truth: pd.DataFrame, bases) -> pd.DataFrame:
    """Each non-learnable ability's best point on ``bases`` (by score) against its planted
    ceiling: ``reached`` (its interval covers the ceiling or lies above), ``exceeded``."""
    rows = []
    pts = counts.points
    for t in truth[~truth["learnable"]].itertuples():
        mine = np.flatnonzero(
            ((pts["ability"] == t.ability) & pts["base"].isin(bases)).to_numpy(bool)
        )
        if not len(mine):
            continue
        best = mine[np.argmax(pts["score"].to_numpy(float)[mine])]
        point, lo, hi = counts.score(best).ci()
        rows.append(
            {
                "ability": t.ability,
                "ceiling": t.ceiling,
                "base": pts["base"].iloc[best],
                "n": pts["n_per_ability"].iloc[best],
                "best": point,
                "lo": lo,
                "hi": hi,
                "reached": bool(hi >= t.ceiling),
                "exceeded": bool(lo > t.ceiling),
            }
        )
    return pd.DataFrame(rows)


def architecture_differences(counts, reference: str, others, ns) -> pd.DataFrame:
    """score(other) - score(reference) per ability and macro, at each n of ``ns`` and
    averaged over the n > 0 among them (replicate by replicate), paired over items and seeds
    (one ``Counts``' draws on both sides). Columns: other, reference, n, ability, diff, lo,
    hi."""
    abilities = sorted(counts.points["ability"].unique())
    rows = []
    for other in others:
        per_n = {}
        for n in ns:
            per_n[n] = {}
            for a in abilities:
                try:
                    mine = counts.column(a, base=other, n_per_ability=n)
                    theirs = counts.column(a, base=reference, n_per_ability=n)
                except KeyError:
                    continue
                per_n[n][a] = counts.difference(mine, theirs)
        trained = [n for n in ns if n > 0]  # an ability missing at one of them: no mean
        averaged = {
            a: mean_over({n: per_n[n][a] for n in trained if a in per_n[n]}, trained)
            for a in abilities
        }
        for n, by_ability in [*per_n.items(), (OVER_N, averaged)]:
            by_ability = {a: e for a, e in by_ability.items() if e is not None}
            macro = counts.macro(by_ability, abilities)
            for a, e in [*by_ability.items(), (MACRO, macro)]:
                if e is None:
                    continue
                point, lo, hi = e.ci()
                rows.append(
                    {
                        "other": other,
                        "reference": reference,
                        "n": n,
                        "ability": a,
                        "diff": point,
                        "lo": lo,
                        "hi": hi,
                    }
                )
    return pd.DataFrame(rows)


def seed_half(rows: StudyRows, seeds) -> StudyRows:
    """The study's rows of the cells trained with one of ``seeds``, and every untuned cell
    (n = 0: no training, so both halves share it; a grid's ``base_seed`` may score it at one
    seed only)."""
    keep = set(seeds)

    def mine(t: pd.DataFrame) -> pd.DataFrame:
        untuned = t["construction"].astype(str) == "base"
        return t[t["seed"].isin(keep) | untuned].reset_index(drop=True)

    table, all_rows = mine(rows.table), mine(rows.all_rows)
    items = rows.items
    if items is not None:
        items = items[items["cell"].isin(set(table["cell"]))].reset_index(drop=True)
    return StudyRows(table, items, all_rows, rows.notes)


def split_half(analysis, halves, seed_sd: float | None = None) -> pd.DataFrame:
    """`agreement` of the sensitivities of two disjoint seed sets (``halves``) of the study
    ``analysis`` (its `Analysis`); ``seed_sd``: the prior a half of one seed draws its seed
    effects with (`Settings.seed_sd`; e.g. the full study's measured one), else its intervals
    cover items only."""
    from doit.analysis.pipeline import Analysis

    settings = analysis.settings if seed_sd is None else replace(analysis.settings, seed_sd=seed_sd)
    a, b = (
        estimates(Analysis(analysis.source, settings, study=seed_half(analysis.rows, seeds)))
        for seeds in halves
    )
    return agreement(a, b)


ESTIMATE_COLUMNS = ["ability", "axis", "value", "se", "class"]


def estimates(analysis) -> pd.DataFrame:
    """One row per (ability, axis): the sensitivity (``value``), its SE (the replicate SD:
    what the analysis's intervals resample) and its class; what `agreement` compares (and
    `studies/micro_reference/restricted.csv` records)."""
    sens = analysis.sensitivities
    table = sens.table.set_index("ability")
    rows = [
        {
            "ability": a,
            "axis": axis,
            "value": float(table.loc[a, f"{axis}_sensitivity"]),
            "se": _se(sens.replicates.get(a, {}).get(axis)),
            "class": table.loc[a, f"{axis}_class"],
        }
        for a in table.index
        for axis in AXES
    ]
    return pd.DataFrame(rows, columns=ESTIMATE_COLUMNS)


def agreement(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Two `estimates` tables side by side (the abilities and axes both hold; columns
    ``value_a``, ``se_a``, ``class_a``, ``value_b``, ...) with the standardised difference
    ``z`` = |a - b| / sqrt(se_a^2 + se_b^2) and ``agree`` (z < 1.96; False where z is not
    finite). Two estimates from shared items or trainings are positively correlated, so
    this z is smaller than with their covariance: a lenient test of agreement."""
    m = a.merge(b, on=["ability", "axis"], suffixes=("_a", "_b"))
    se = np.hypot(m["se_a"], m["se_b"])
    m["z"] = (m["value_a"] - m["value_b"]).abs() / se.where(se > 0)
    m["agree"] = m["z"] < Z
    return m.sort_values(["ability", "axis"], ignore_index=True)


def against_reference(analysis, classes: pd.DataFrame, restricted: pd.DataFrame) -> dict:
    """How a smaller study (the demo) agrees with the reference study: ``decided``, the
    in-domain abilities whose data class it decided; ``agree``, those whose class is the reference's
    (``classes``: the reference's sensitivity.csv); ``fits``, per axis, the abilities whose
    sensitivity `agreement` says agrees with the reference's fit restricted to the smaller
    study's bases and n (``restricted``: an `estimates` table), and ``of``, how many were
    compared on that axis."""
    own = estimates(analysis)
    data = own[(own["axis"] == "data") & own["class"].isin(DECIDED)]
    data = data[data["ability"].isin(ab.ABILITY_KEYS)]  # the ten, not the C-Eval sets
    ref_class = classes.set_index("ability")["data_class"]
    out = {"decided": sorted(data["ability"])}
    out["agree"] = sorted(
        a for a, c in zip(data["ability"], data["class"]) if ref_class.get(a) == c
    )
    both = agreement(own, restricted)
    both = both[np.isfinite(both["z"])]
    out["fits"] = {
        ax: sorted(both.loc[both["agree"] & (both["axis"] == ax), "ability"]) for ax in AXES
    }
    out["of"] = {ax: int((both["axis"] == ax).sum()) for ax in AXES}
    return out


def _se(reps) -> float:
    if reps is None:
        return np.nan
    finite = np.asarray(reps, float)[np.isfinite(reps)]
    return float(np.std(finite, ddof=1)) if len(finite) > 1 else np.nan


REFERENCE_DIR = "studies/micro_reference"  # the recorded reference study (the repository's)
REFERENCE_FILES = ("sensitivity.csv", "restricted.csv")  # what a smaller study is graded against


def read_reference(folder) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The recorded reference study's ``sensitivity.csv`` (its classes) and ``restricted.csv``
    (`estimates` over the demo's bases), or None where either is missing (not yet run)."""
    from pathlib import Path

    paths = [Path(folder) / name for name in REFERENCE_FILES]
    if not all(p.is_file() for p in paths):
        return None
    classes, restricted = (pd.read_csv(p) for p in paths)
    missing = sorted(set(ESTIMATE_COLUMNS) - set(restricted.columns))
    if missing:
        raise ValueError(f"{paths[1]}: columns {missing} missing (expected {ESTIMATE_COLUMNS})")
    if "data_class" not in classes.columns:
        raise ValueError(f"{paths[0]}: no data_class column")
    return classes, restricted


# What a one-seed micro study borrows for its seed draws (`Settings.seed_sd`, `.seed_corr`), as
# the recorded seed-noise study measured it on the demo's own recipe and install: the seed
# component of its `demo` arm (vanilla_s, n = 16-256, 3 seeds, on the logit of a point's score)
# and the component's correlation across abilities over all its runs.
SEED_PRIOR_FILE = "studies/seed_noise_micro/seed_noise.csv"
SEED_PRIOR_ROWS = {
    "sd": {"arm": "demo", "measure": "seed_component_logit"},
    "corr": {"arm": "demo+tenth+zero", "measure": "seed_component_corr"},
}


class SeedPrior(NamedTuple):
    sd: float  # the seed component's SD (logit), `Settings.seed_sd`
    corr: float  # its correlation across a training's abilities, clipped to 0-1


def read_seed_prior(path) -> SeedPrior | None:
    """The seed prior recorded in ``path`` (``SEED_PRIOR_ROWS``' ``value``s), or None where the
    file is missing (not recorded); a ResultsError naming the file, line and field when a row is
    missing or its value is not a number (an SD below 0)."""
    from pathlib import Path

    from doit.grid.results import ResultsError

    path = Path(path)
    if not path.is_file():
        return None
    table = pd.read_csv(path)
    values = {}
    for name, row in SEED_PRIOR_ROWS.items():
        mine = np.ones(len(table), bool)
        for key, value in row.items():
            if key not in table.columns:
                raise ResultsError(f"{path}: no {key} column")
            mine &= (table[key] == value).to_numpy()
        if mine.sum() != 1 or "value" not in table.columns:
            raise ResultsError(f"{path}: expected one row {row} with a value column")
        line = int(np.flatnonzero(mine)[0]) + 2  # the header is line 1
        values[name] = pd.to_numeric(table.loc[mine, "value"], errors="coerce").iloc[0]
        if not (values[name] >= 0 if name == "sd" else np.isfinite(values[name])):
            raise ResultsError(f"{path}, line {line}, field value: {values[name]} ({name})")
    return SeedPrior(float(values["sd"]), float(np.clip(values["corr"], 0.0, 1.0)))
