"""``--validate``: train the competing policies at the same budget and compare them with uniform.

``grid`` writes ``DIR/validate/grid.yaml``: the study's grid (every key it has, the
formulation's included) with one base, the target, and one ``data.mix`` cell per equal-budget
policy (``DIR/mixes/<policy>-<budget>.yaml``) for the training seeds (two or more give CIs
that resample seeds too; one gives CIs over items only, and the tables' ``seeds`` say so).
Uniform is not trained again when the study already holds the cells its mix would redraw
(`reused_uniform`: the target base's n-per-ability cells of that n, pool and data seed, done
for every validation seed): their rows stand for it. ``run`` plans it into
``DIR/validate/study`` and runs its policy cells through `doit.grid` (a rerun resumes, keeping
finished cells; the n = 0 cells every plan holds are left unrun);
``compare`` reads its results:

- **calibration** (``calibration.csv``): per policy and ability, the predicted validation score
  (and CI) beside the measured one (the last epoch, seeds pooled, its CI from the paired item
  bootstrap), their difference and z = difference / sqrt(se_predicted^2 + se_measured^2)
  (se: the CI's width / 3.92); ``covered``: |z| < 1.96;
- **differences** (``differences.csv``): each policy's score minus uniform's on **test** (and
  every benchmark split the grid scored), per ability (the C-Eval sets included), ``macro``
  (the in-domain abilities' mean) and ``overall`` (every test ability's mean), with a paired
  item-bootstrap 95% CI (seeds resampled first); benchmark splits without per-item rows fall
  back to binomial resampling, said in ``method``.

Grid paths are relative to the current directory, as for the study itself: run --validate from
where the study was planned.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from doit.analysis.bootstrap import Estimate, Z, bootstrap_counts, mean_over
from doit.analysis.curriculum import policies
from doit.analysis.curriculum.core import MACRO, Result
from doit.analysis.curriculum.options import CurriculumError
from doit.analysis.curriculum.outputs import mix_name
from doit.analysis.select import select_checkpoints
from doit.data import abilities as ab
from doit.data import macro as macro_rule
from doit.io import atomic_path, atomic_write_text

NONE = Estimate(np.nan, None)  # a summary row's values when its abilities are not all there
DROP = ("name", "bases", "data", "seed", "sample_seed", "sweep", "pretrain_seed")


def grid(result: Result, out: Path, seeds=(0, 1)) -> dict:
    """The validation grid's mapping (module docstring); CurriculumError when the study is not
    a planned study folder or the target is not one of its bases."""
    from doit.grid.plan import PLAN, read_plan

    source, ev = Path(result.evidence.analysis.source), result.evidence
    if not (source / PLAN).is_file():
        raise CurriculumError(
            f"--validate needs a study folder (with {PLAN}) to take the base "
            f"and recipe from; {source} is not one"
        )
    if not seeds:
        raise CurriculumError("--validate needs training seeds (--seeds 0,1)")
    raw = read_plan(source).grid.raw
    base = [b for b in raw["bases"] if b.get("name") == ev.target]
    if not base:
        raise CurriculumError(
            f"--validate trains the target base, and {ev.target} is not one of "
            "the study's bases: give --base"
        )
    reused = result.baseline.policy if reused_uniform(result, seeds) else None
    mixes = [
        str((Path(out) / "mixes" / f"{mix_name(p, result.options.budget)}.yaml").resolve())
        for p, alloc in result.allocations.items()
        if alloc.equal_budget and p != reused
    ]
    kept = {k: v for k, v in raw.items() if k not in DROP}
    return {
        "name": f"{raw['name']}-curriculum-{result.options.budget}",
        **kept,
        "bases": base,
        "data": {"mix": mixes},
        "seed": sorted(set(seeds)),
        "sample_seed": [0],
    }


def reused_uniform(result: Result, seeds) -> dict[int, str] | None:
    """{seed: cell id} of the study's cells that uniform's mix would draw again: uniform gives
    every ability the same n, and the study has the target base's n-per-ability cell of that n
    (no ability left out, the mix's pool, data seed 0) finished for every seed; else None."""
    from doit.grid.plan import PLAN, read_plan

    counts = set(result.baseline.counts.values())
    source = Path(result.evidence.analysis.source)
    if len(counts) != 1 or not (source / PLAN).is_file():
        return None
    (n,) = counts
    table = result.evidence.analysis.table
    done = set(table["cell"])
    found = {
        c.seed: c.id
        for c in read_plan(source).cells
        if c.kind == "sft"
        and c.base == result.evidence.target
        and c.n_per_ability == n
        and c.construction == "curated"
        and c.excluded_ability is None
        and c.sample_seed == 0
        and (c.recipe or {}).get("pool", "1000") == result.options.source
        and c.id in done
    }
    return found if all(s in found for s in seeds) else None


def run(
    result: Result,
    out: Path,
    seeds=(0, 1),
    max_parallel: int = 1,
    threads: int | None = None,
    backend: str = "local",
) -> dict[str, pd.DataFrame]:
    """Write the validation grid, plan and run it, compare; the tables are written too."""
    from doit.grid.plan import write_plan
    from doit.grid.runner import run_study
    from doit.grid.spec import load_grid

    folder = Path(out) / "validate"
    mapping = grid(result, out, seeds)
    path = atomic_write_text(
        folder / "grid.yaml",
        "# doit analysis curriculum --validate\n"
        + yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True),
    )
    write_plan(load_grid(path), folder / "study", replan=True)
    # the policies' cells only: the untuned base's n = 0 cells the plan adds compare nothing
    run_study(folder / "study", backend, max_parallel, threads, pattern="*-mix_*")
    tables = compare(result, folder / "study", reused=reused_uniform(result, seeds))
    for name, df in tables.items():
        with atomic_path(folder / f"{name}.csv") as tmp:
            df.to_csv(tmp, index=False)
    return tables


def policy_of(mix: str) -> str:
    return str(mix).rsplit("-", 1)[0]


def compare(
    result: Result, study, replicates: int | None = None, reused: dict[int, str] | None = None
) -> dict[str, pd.DataFrame]:
    """calibration and differences (module docstring) from the validation study's results, the
    ``reused`` cells of the analysed study standing for uniform."""
    from doit.grid.results import read_results

    o = result.options
    table = read_results(study)
    items = read_results(study, per_item=True)
    table = table[table["construction"] == "mix"].assign(mix=lambda d: d["mix"].map(policy_of))
    if reused:
        source = result.evidence.analysis.source
        cells = set(reused.values())
        mine = read_results(source)
        mine = mine[mine["cell"].isin(cells)].assign(construction="mix", mix=result.baseline.policy)
        table = pd.concat([table, mine.astype(table.dtypes.to_dict())], ignore_index=True)
        theirs = read_results(source, per_item=True)
        items = pd.concat([items, theirs[theirs["cell"].isin(cells)]], ignore_index=True)
    if table.empty:
        raise CurriculumError(f"{study}: no finished policy cell to compare (doit grid status)")
    reps, seed = replicates or o.replicates, o.seed
    valid = bootstrap_counts(
        select_checkpoints(table, "last", ("valid",)), items, reps, seed, ("valid",)
    )
    selected = select_checkpoints(table, "last")
    return {
        "calibration": calibration(result, valid),
        "differences": differences(selected, items, reps, seed),
    }


def calibration(result: Result, valid) -> pd.DataFrame:
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
            }
        )
    return pd.DataFrame(rows)


def differences(selected: pd.DataFrame, items, replicates: int, seed: int) -> pd.DataFrame:
    rows, base = [], policies.baseline().name
    for split in ["test", *sorted(set(selected["split"]) - {"test", "valid"})]:
        counts = bootstrap_counts(selected, items, replicates, seed, (split,))
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
            rows += [_diff_row(policy, split, k, *e, counts.method) for k, e in per.items()]
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
        rows.append(_diff_row(policy, "test", name, *means, counts.method))
    return rows


def _order(k: str):
    return (ab.ABILITY_KEYS.index(k) if k in ab.ABILITY_KEYS else len(ab.ABILITY_KEYS), k)


def _diff_row(policy, split, ability, diff: Estimate, uniform, score, method) -> dict:
    """One row of differences.csv: ``diff`` the paired difference, ``uniform`` and ``score``
    the two scores (estimates; their points are written)."""
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
        "method": method,
    }


def blocks(tables: dict[str, pd.DataFrame]) -> list[tuple[str, object]]:
    cal, diff = tables["calibration"], tables["differences"]
    out = [("h2", "Validation: the policies trained, against uniform")]
    if len(cal):
        out.append(
            (
                "p",
                f"Calibration on valid: mean absolute error "
                f"{cal['error'].abs().mean():.2f} points, {100 * cal['covered'].mean():.0f}% "
                f"of {len(cal)} (policy, ability) predictions within their combined 95% "
                "interval.",
            )
        )
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
    return out
