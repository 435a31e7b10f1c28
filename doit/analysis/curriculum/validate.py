"""``--validate``: train the competing policies at the same budget and compare them with uniform.

``run`` has the grid train them (`doit.grid.train_mixes`, ``DIR/validate/grid.yaml`` and
``DIR/validate/study``; ``validation_grid`` is its mapping): the study's grid (every key it has, the
formulation's included) with one base, the target, and one ``data.mix`` cell per equal-budget
policy (``DIR/mixes/<policy>-<budget>.yaml``) for the training seeds (two or more give CIs
that resample seeds too; one gives CIs over items only, and the tables' ``seeds`` say so).
Uniform is not trained again when the study already holds the cells its mix would redraw (the
target base's n-per-ability cells of that n, pool and data seed 0, analysed for every
validation seed; `doit.grid.reusable_cells`): their rows stand for it. A rerun resumes,
keeping finished cells. ``compare`` reads the results:

- **calibration** (``calibration.csv``): per policy and ability, the predicted validation score
  (and CI) beside the measured one (the last epoch, seeds pooled, its CI from the paired item
  bootstrap), their difference and z = difference / sqrt(se_predicted^2 + se_measured^2)
  (se: the CI's width / 3.92); ``covered``: |z| < 1.96; ``in_sample``: the policy's cells
  are cells the curves were fitted to (the study's own uniform cells standing for uniform, or
  a mix equal to a fitted cell's, as reconstruct's often is): the report's calibration numbers
  are over the other, out-of-sample rows only;
- **differences** (``differences.csv``): each policy's score minus uniform's on **test** (and
  every benchmark split the grid scored), per ability (the C-Eval sets included), ``macro``
  (the in-domain abilities' mean) and ``overall`` (every test ability's mean), with a paired
  item-bootstrap 95% CI (seeds resampled first); benchmark splits without per-item rows fall
  back to binomial resampling, said in ``method``;
- **forgetting** (``forgetting.csv``, staged policies only): per staged policy and test ability,
  the score of its first stage's final model and of its last stage's, and ``change`` = last -
  first with a paired item-bootstrap 95% CI (seeds resampled first), and ``macro``: the
  in-domain abilities' mean. The first stage's abilities falling is forgetting; the others
  rising is the second stage learning.

Grid paths are relative to the current directory, as for the study itself: run --validate from
where the study was planned. This module keeps the statistics; the grid does the training.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from doit.analysis.bootstrap import Estimate, Z, bootstrap_counts, mean_over
from doit.analysis.curriculum import policies
from doit.analysis.curriculum.core import MACRO, Result
from doit.analysis.curriculum.options import CurriculumError
from doit.analysis.curriculum.outputs import mix_name
from doit.analysis.select import select_checkpoints
from doit.data import abilities as ab
from doit.data import macro as macro_rule
from doit.io import atomic_path

NONE = Estimate(np.nan, None)  # a summary row's values when its abilities are not all there


def validation_grid(result: Result, out: Path, seeds=(0, 1)) -> dict:
    """The validation grid's mapping (module docstring) on the base the mixes are for;
    CurriculumError when the study is not a planned study folder or the base is not one of
    its bases."""
    from doit.grid import mix_grid

    return _asked(mix_grid, **_request(result, out, seeds))[0]


def run(
    result: Result,
    out: Path,
    seeds=(0, 1),
    max_parallel: int = 1,
    threads: int | None = None,
    backend: str = "local",
) -> dict[str, pd.DataFrame]:
    """Train the policies' mixes (`doit.grid.train_mixes`) on the base they are for and, under
    ``--fit-base``, on the base they were chosen on too (``validate/fit-<base>/``); compare;
    the tables are written into ``validate/``."""
    from doit.grid import train_mixes

    ev, folder = result.evidence, Path(out) / "validate"
    tables_by = {}
    for base in dict.fromkeys([ev.trained_on, ev.target]):  # the trained base first
        where = folder if base == ev.trained_on else folder / f"fit-{base}"
        trained = _asked(
            train_mixes,
            **_request(result, out, seeds, base),
            where=where,
            made_by="doit analysis curriculum --validate",
            max_parallel=max_parallel,
            threads=threads,
            backend=backend,
        )
        tables_by[base] = compare(result, trained.study, reused=trained.reused)
    tables = combined(result, tables_by)
    for name, df in tables.items():
        with atomic_path(folder / f"{name}.csv") as tmp:
            df.to_csv(tmp, index=False)
    return tables


def combined(result: Result, by: dict[str, dict]) -> dict[str, pd.DataFrame]:
    """One set of tables from each base's `compare`: calibration on the base the curves chose
    on (its predictions are that base's), differences and forgetting with a ``base`` column,
    and under ``--fit-base`` the **decision** table (`decision`)."""
    ev = result.evidence
    out = {"calibration": by[ev.target]["calibration"]}
    for name in ("differences", "forgetting"):
        out[name] = pd.concat(
            [t[name].assign(base=base) for base, t in by.items()], ignore_index=True
        )
    if ev.target != ev.trained_on:
        out["decision"] = decision(out["differences"], ev.target, ev.trained_on)
    return out


DECISION = ["policy", "fit_base", "diff_fit", "lo_fit", "hi_fit", "base", "diff", "lo", "hi"]


def decision(diff: pd.DataFrame, fit_base: str, base: str) -> pd.DataFrame:
    """decision.csv: per policy, its test macro difference from uniform on the base it was
    chosen on and on the base it is for, ``held``: the same sign on both (DataDecide's
    question: does a choice made small hold at the larger size), and ``confirmed``: both
    intervals exclude 0 on the same side (held, and shown to hold)."""
    macro = diff[(diff["split"] == "test") & (diff["ability"] == MACRO)].set_index(
        ["base", "policy"]
    )
    rows = []
    for policy in sorted(set(macro.index.get_level_values("policy"))):
        if (fit_base, policy) not in macro.index or (base, policy) not in macro.index:
            continue
        f, t = macro.loc[(fit_base, policy)], macro.loc[(base, policy)]
        values = (policy, fit_base, f["diff"], f["diff_lo"], f["diff_hi"], base)
        rows.append(dict(zip(DECISION, (*values, t["diff"], t["diff_lo"], t["diff_hi"]))))
    table = pd.DataFrame(rows, columns=DECISION)
    table["held"] = np.sign(table["diff_fit"]) == np.sign(table["diff"])
    above = (table["lo_fit"] > 0) & (table["lo"] > 0)
    table["confirmed"] = above | ((table["hi_fit"] < 0) & (table["hi"] < 0))
    return table


def _request(result: Result, out: Path, seeds, base: str | None = None) -> dict:
    """What the grid trains: the equal-budget policies' mixes on ``base`` (default the base
    they are for), the baseline's (uniform's) reusable (the study's own cells that would draw
    it again, among the analysed ones)."""
    from doit.grid import Reusable

    budget, ev = result.options.budget, result.evidence
    mixes = [
        Path(out) / "mixes" / f"{mix_name(p, budget)}.yaml"
        for p, alloc in result.allocations.items()
        if alloc.equal_budget
    ]
    return dict(
        source=ev.analysis.source,
        base=base or ev.trained_on,
        mixes=mixes,
        seeds=seeds,
        name=f"curriculum-{budget}",
        reusable=Reusable(
            Path(out) / "mixes" / f"{mix_name(result.baseline.policy, budget)}.yaml",
            result.baseline.counts,
            result.options.pool,
        ),
        among=set(ev.analysis.table["cell"]),
    )


def _asked(call, **kwargs):
    """``call(**kwargs)``, a grid's refusal as the curriculum's (``--validate: ...``)."""
    from doit.grid import MixStudyError

    try:
        return call(**kwargs)
    except MixStudyError as e:
        raise CurriculumError(f"--validate: {e}") from None


def policy_of(mix: str) -> str:
    return str(mix).rsplit("-", 1)[0]


def compare(
    result: Result, study, replicates: int | None = None, reused: dict[int, str] | None = None
) -> dict[str, pd.DataFrame]:
    """calibration and differences (module docstring) from the validation study's results, the
    ``reused`` cells of the analysed study standing for uniform; both read as the analysis
    reads a study (`doit.analysis.study.read_study`, under the curriculum's formulation
    settings)."""
    from doit.analysis.study import read_study

    s = result.options.settings
    rows = read_study(study, s.formulation, s.cell_formulation, s.formulation_split, s.bases)
    table = rows.table[rows.table["construction"] == "mix"]
    table = table.assign(mix=table["mix"].map(policy_of))
    items = [rows.items]
    if reused:
        a, cells = result.evidence.analysis, set(reused.values())
        mine = a.table[a.table["cell"].isin(cells)].assign(
            construction="mix", mix=result.baseline.policy
        )
        table = pd.concat([table, mine.astype(table.dtypes.to_dict())], ignore_index=True)
        items.append(None if a.items is None else a.items[a.items["cell"].isin(cells)])
    items = [i for i in items if i is not None]
    items = pd.concat(items, ignore_index=True) if items else None
    if table.empty:
        raise CurriculumError(f"{study}: no finished policy cell to compare (doit grid status)")
    reps, seed = replicates or s.replicates, s.seed
    valid = bootstrap_counts(
        select_checkpoints(table, "last", ("valid",)),
        items,
        reps,
        seed,
        ("valid",),
        s.seed_sd,
        s.seed_corr,
    )
    selected = select_checkpoints(table, "last")
    return {
        "calibration": calibration(result, valid, in_sample(result, reused)).assign(
            resamples=valid.resamples
        ),
        "differences": differences(selected, items, reps, seed, s.seed_sd, s.seed_corr),
        "forgetting": forgetting(result, study, reps),
    }


FIRST = "@first"  # a staged policy's first stage, as its mix label in `forgetting`
FORGETTING = ["policy", "ability", "first", "last", "change", "change_lo", "change_hi"]


def forgetting(result: Result, study, replicates: int) -> pd.DataFrame:
    """forgetting.csv (module docstring) from the validation study's staged cells, read with
    their earlier stages (`doit.analysis.study.read_study`'s ``stages``)."""
    from doit.analysis.study import is_stage_cell, read_study

    staged = {p for p, alloc in result.allocations.items() if alloc.stages}
    s = result.options.settings
    if not staged:
        return pd.DataFrame(columns=FORGETTING)
    rows = read_study(
        study, s.formulation, s.cell_formulation, s.formulation_split, s.bases, stages=True
    )
    t = rows.table[(rows.table["construction"] == "mix") & rows.table["stage"].notna()]
    t = t.assign(mix=t["mix"].map(policy_of))
    t = t[t["mix"].isin(staged) & t["split"].eq("test")]
    first = t["stage"] == 1
    t = t[first | ~is_stage_cell(t["cell"])]  # stage 1 and each cell's own (its last)
    t = t.assign(mix=t["mix"].where(t["stage"] != 1, t["mix"] + FIRST))
    if t.empty:
        return pd.DataFrame(columns=FORGETTING)
    counts = bootstrap_counts(
        select_checkpoints(t, "last", ("test",)),
        rows.items,
        replicates,
        s.seed,
        ("test",),
        s.seed_sd,
        s.seed_corr,
    )
    out = []
    for policy in sorted(staged):
        per = {}
        for k in sorted(set(counts.points["ability"]), key=_order):
            try:
                i, j = counts.column(k, mix=policy + FIRST), counts.column(k, mix=policy)
            except KeyError:
                continue
            per[k] = (counts.score(i), counts.score(j), counts.difference(j, i))
        scored = list(per)
        if macro_rule.in_domain(scored):
            means = [
                counts.macro({k: e[n] for k, e in per.items()}, scored) or NONE for n in range(3)
            ]
            per[MACRO] = tuple(means)
        for k, (one, last, change) in per.items():
            lo, hi = change.interval()
            out.append(
                dict(zip(FORGETTING, (policy, k, one.point, last.point, change.point, lo, hi)))
            )
    return pd.DataFrame(out, columns=FORGETTING).assign(
        method=counts.method, resamples=counts.resamples
    )


def in_sample(result: Result, reused: dict[int, str] | None = None) -> set[str]:
    """The policies whose measured cells are cells the curves were fitted to: the baseline
    when the study's own cells stand for it (``reused``), and every policy whose mix gives each
    ability what a fitted cell of the target gave it (a uniform or leave-one-out cell, a
    random mix: `evidence.cell_counts` of the analysed cells)."""
    from doit.analysis.curriculum.evidence import cell_counts

    a, ev = result.evidence.analysis, result.evidence
    fitted = cell_counts(a.selected[a.selected["base"] == ev.target]).values()
    same = [
        name
        for name, alloc in result.allocations.items()
        if any(
            all(float(alloc.counts.get(k, 0)) == cell.get(k, 0.0) for k in ev.abilities)
            for cell in fitted
        )
    ]
    return set(same) | ({result.baseline.policy} if reused else set())


def calibration(result: Result, valid, fitted: set[str] = frozenset()) -> pd.DataFrame:
    """calibration.csv: a row per policy and ability measured; ``in_sample`` marks the
    policies in ``fitted`` (`in_sample`), which the report's calibration leaves out."""
    pred = result.table[result.table["ability"] != MACRO]
    rows = []
    for r in pred.itertuples():
        try:
            i = valid.column(r.ability, mix=r.policy)
        except KeyError:
            continue
        score, lo, hi = valid.score(i).ci()
        se = np.hypot((r.predicted_hi - r.predicted_lo) / (2 * Z), (hi - lo) / (2 * Z))
        z = (score - r.predicted) / se if se > 0 else np.nan
        rows.append(
            {
                "policy": r.policy,
                "ability": r.ability,
                "n": r.n,
                "predicted": r.predicted,
                "predicted_lo": r.predicted_lo,
                "predicted_hi": r.predicted_hi,
                "measured": score,
                "measured_lo": lo,
                "measured_hi": hi,
                "error": score - r.predicted,
                "z": z,
                "covered": bool(abs(z) < Z) if np.isfinite(z) else False,
                "seeds": int(valid.points["seeds"].iloc[i]),
                "in_sample": r.policy in fitted,
            }
        )
    return pd.DataFrame(rows)


def differences(
    selected: pd.DataFrame,
    items,
    replicates: int,
    seed: int,
    seed_sd: float | None = None,
    seed_corr: float = 1.0,
) -> pd.DataFrame:
    rows, base = [], policies.baseline().name
    for split in ["test", *sorted(set(selected["split"]) - {"test", "valid"})]:
        counts = bootstrap_counts(selected, items, replicates, seed, (split,), seed_sd, seed_corr)
        pts = counts.points
        scored = sorted(set(pts["ability"]), key=_order)  # every ability the split scores
        for policy in sorted(set(pts["mix"]) - {base}):
            per = {}  # ability -> (difference, the baseline's score, the policy's)
            for k in scored:
                try:
                    i, j = counts.column(k, mix=policy), counts.column(k, mix=base)
                except KeyError:
                    continue
                per[k] = (counts.difference(i, j), counts.score(j), counts.score(i))
            rows += [_diff_row(policy, split, k, *e, counts) for k, e in per.items()]
            if split == "test":
                rows += _summary_rows(counts, policy, per, scored)
    return pd.DataFrame(rows)


def _summary_rows(counts, policy: str, per: dict, scored: list[str]) -> list[dict]:
    """The ``macro`` (the in-domain abilities the split scores) and ``overall`` (every ability
    it scores) rows; their values are empty when the policy or the baseline lacks one of them
    (``doit.data.macro``'s rule)."""
    diffs, uniform, score = ({k: e[n] for k, e in per.items()} for n in range(3))
    summaries = [(MACRO, counts.macro, scored), ("overall", mean_over, scored)]
    rows = []
    for name, average, expected in summaries:
        if name == MACRO and not macro_rule.in_domain(expected):
            continue
        means = [average(part, expected) or NONE for part in (diffs, uniform, score)]
        rows.append(_diff_row(policy, "test", name, *means, counts))
    return rows


def _order(k: str):
    return (ab.ABILITY_KEYS.index(k) if k in ab.ABILITY_KEYS else len(ab.ABILITY_KEYS), k)


def _diff_row(policy, split, ability, diff: Estimate, uniform, score, counts) -> dict:
    """One row of differences.csv: ``diff`` the paired difference, ``uniform`` and ``score``
    the two scores (estimates; their points are written); ``counts``' method and what its
    intervals resample."""
    lo, hi = diff.interval()
    return {
        "policy": policy,
        "split": split,
        "ability": ability,
        "uniform": uniform.point,
        "score": score.point,
        "diff": diff.point,
        "diff_lo": lo,
        "diff_hi": hi,
        "method": counts.method,
        "resamples": counts.resamples,
    }


def calibration_text(cal: pd.DataFrame) -> str:
    """The calibration sentence, over the out-of-sample predictions only (the in-sample ones,
    cells the curves were fitted to, named and left out)."""
    inside = cal["in_sample"].astype(bool) if "in_sample" in cal else pd.Series(False, cal.index)
    out, named = cal[~inside], ", ".join(sorted(set(cal.loc[inside, "policy"])))
    left = (
        f" The {int(inside.sum())} in-sample predictions ({named}: a mix the curves were "
        "fitted to) are left out of these numbers (in_sample in the table)."
        if inside.any()
        else ""
    )
    if out.empty:
        return "Calibration on valid: no out-of-sample prediction to calibrate." + left
    return (
        f"Calibration on valid, out of sample: mean absolute error "
        f"{out['error'].abs().mean():.2f} points, {int(out['covered'].sum())} of {len(out)} "
        f"(policy, ability) predictions within their combined 95% interval." + left
    )


def blocks(tables: dict[str, pd.DataFrame]) -> list[tuple[str, object]]:
    cal, diff, forgot = tables["calibration"], tables["differences"], tables.get("forgetting")
    out = [("h2", "Validation: the policies trained, against uniform")]
    if len(cal):
        out.append(("p", calibration_text(cal)))
    head = diff[(diff["split"] == "test") & diff["ability"].isin([MACRO, "overall"])]
    out += [
        ("h3", "Test: difference from uniform (paired item bootstrap, 95% CI)"),
        (
            "p",
            f"macro: the mean of the {len(ab.ABILITY_KEYS)} in-domain abilities; overall: "
            "the mean of every test ability, the OOD sets (C-Eval) included.",
        ),
        ("table", head.round(2)),
        ("h3", "Per ability"),
        ("table", diff.round(2)),
        ("h3", "Calibration (valid)"),
        ("table", cal.round(2)),
    ]
    made = tables.get("decision")
    if made is not None and len(made):
        out += [
            (
                "h3",
                "Decisions across sizes: each policy's test macro gain where it was chosen and where it is for",
            ),
            ("table", made.round(2)),
        ]
    if forgot is not None and len(forgot):
        out += [
            (
                "h3",
                "Forgetting: the staged policies' test scores after the first stage and the last",
            ),
            ("table", forgot.round(2)),
        ]
    return out
