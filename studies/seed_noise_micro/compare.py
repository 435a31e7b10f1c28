"""The seed-noise lever's arms side by side (issue #30; README.md beside this file).

    python studies/seed_noise_micro/compare.py ARM=STUDY ARM=STUDY [...] --out DIR

Each STUDY a study folder of this grid (or a per-item table beside its results.csv); the
first ARM is the baseline the others are compared with. Per arm, over the (ability, n) points
that every arm has, on the test split of the ten in-domain abilities: the seeds' spread of the
score (points, pooled SD with ddof 1), the per-item flip rate (the share of items two seeds of
a point answer differently, mean over seed pairs), the seed component the analysis estimates
(`doit.stats.variance`: the spread beyond independent per-item flips, logit), the macro score
per n and its rise from the smallest n to the largest. Intervals resample the points (ability
x n, each with its seeds and items), paired across arms, 2,000 replicates, under the analysis's
interval rule (bias-corrected percentile). Over every arm's runs together, the correlation of
two abilities' seed effects within a run (`seed_correlation`; its interval resamples the
(arm, n) groups), of the runs' deviations and of the seed component alone. Writes
DIR/seed_noise.csv (one row per arm and measure) and prints it.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from doit.analysis.bootstrap import interval
from doit.data.abilities import ABILITY_KEYS
from doit.grid.results import read_results
from doit.io import atomic_path
from doit.stats.variance import item_moments, pooled_seed_variance

KEY = ["ability", "n_per_ability"]
REPLICATES = 2000


def outcomes(items: pd.DataFrame, rows: pd.DataFrame, base: str) -> dict:
    """{(ability, n): (seeds x items) 0/1 matrix} of ``base``'s fine-tuned test cells, the ten
    in-domain abilities."""
    cells = rows.loc[(rows["base"] == base) & (rows["n_per_ability"] > 0)]
    cells = cells[["cell", "n_per_ability", "seed"]].drop_duplicates("cell")
    test = items[(items["split"] == "test") & items["ability"].isin(ABILITY_KEYS)]
    test = test.merge(cells, on="cell")
    out = {}
    for (ability, n), block in test.groupby(KEY):
        wide = block.pivot_table(index="seed", columns="idx", values="correct", aggfunc="first")
        out[(ability, int(n))] = wide.dropna(axis=1).to_numpy(dtype=float)
    return out


def load(path: Path, base: str) -> dict:
    """`outcomes` of a study folder, or of a per-item table beside its ``results.csv``."""
    table = path.with_name("results.csv") if path.is_file() else path
    return outcomes(read_results(path, per_item=True), read_results(table), base)


def point_stats(y: np.ndarray) -> dict:
    """One point's (seeds x items) statistics, fixed under the resampling of points: its seeds'
    score variance, its mean flip rate over seed pairs, its seed moments, its score."""
    pairs = itertools.combinations(range(len(y)), 2)
    return {
        "var": y.mean(1).var(ddof=1),
        "flips": np.mean([np.mean(y[a] != y[b]) for a, b in pairs]),
        "moments": seed_moments(y),
        "score": 100 * y.mean(),
    }


def seed_moments(y: np.ndarray) -> np.ndarray:
    """One point's (seeds x items) row of `doit.stats.variance.item_moments`."""
    return item_moments([np.arange(len(y))], y, np.ones_like(y, bool))


def measures(stats: list[dict], ns: np.ndarray) -> dict:
    """The arm's measures over the points ``stats`` (`point_stats`) whose n are ``ns``."""
    total, noise, _ = pooled_seed_variance(np.vstack([p["moments"] for p in stats]))
    score = np.array([p["score"] for p in stats])
    macro = {int(n): score[ns == n].mean() for n in np.unique(ns)}
    return {
        "seed_sd_points": 100 * np.sqrt(np.mean([p["var"] for p in stats])),
        "flip_rate": 100 * np.mean([p["flips"] for p in stats]),
        "seed_component_logit": np.sqrt(max(total - noise, 0.0)),
        **{f"macro_n{n}": v for n, v in macro.items()},
        "rise": macro[max(macro)] - macro[min(macro)],
    }


def compare(arms: dict[str, dict], replicates: int = REPLICATES, seed: int = 0) -> pd.DataFrame:
    """One row per arm and measure: point, 95% interval over resampled points (the analysis's
    interval rule, `doit.analysis.bootstrap.interval`), and the difference from the first arm
    with its paired interval."""
    keys = sorted(set.intersection(*(set(a) for a in arms.values())))
    ns = np.array([n for _, n in keys])
    stats = {name: [point_stats(a[k]) for k in keys] for name, a in arms.items()}
    point = {name: measures(st, ns) for name, st in stats.items()}
    rng = np.random.default_rng(seed)
    reps = {name: [] for name in arms}
    for _ in range(replicates):
        draw = rng.integers(0, len(keys), len(keys))
        while len(np.unique(ns[draw])) < len(np.unique(ns)):  # every n in every replicate
            draw = rng.integers(0, len(keys), len(keys))
        for name, st in stats.items():
            reps[name].append(measures([st[i] for i in draw], ns[draw]))
    first = next(iter(arms))
    rows = []
    for name in arms:
        for m, value in point[name].items():
            r = np.array([x[m] for x in reps[name]])
            d = r - np.array([x[m] for x in reps[first]])
            diff = value - point[first][m]
            lo, hi = interval(value, r)
            diff_lo, diff_hi = interval(diff, d) if name != first else (0.0, 0.0)
            rows.append(
                {
                    "arm": name,
                    "measure": m,
                    "value": value,
                    "lo": lo,
                    "hi": hi,
                    "diff": diff,
                    "diff_lo": diff_lo,
                    "diff_hi": diff_hi,
                    "points": len(keys),
                    "resamples": f"ability x n points, paired across arms ({replicates})",
                }
            )
    return pd.DataFrame(rows)


def run_groups(outcome: dict) -> list[tuple[pd.DataFrame, float]]:
    """Per n: a row per seed's run and a column per ability, the run's score minus the mean of
    its n's seeds (points), and the item-outcome part of those residuals' sum of squares,
    sum over abilities of (s - 1) W (points^2; W the items' flips over seeds, `item_moments`)."""
    out = []
    for n in sorted({n for _, n in outcome}):
        ys = {a: y for (a, m), y in outcome.items() if m == n}
        wide = pd.DataFrame({a: 100 * y.mean(1) for a, y in ys.items()})
        flips = 1e4 * sum(float(m[:, 0] @ m[:, 2]) for m in map(seed_moments, ys.values()))
        out.append((wide - wide.mean(), flips))
    return out


def seed_correlation(arms: dict[str, dict], replicates: int = REPLICATES, seed: int = 0):
    """Two rows: the correlation of two abilities' deviations within a run (their seeds' mean
    removed), over every arm's runs, ``seed_corr_across_abilities`` = C / ((K - 1) S), and the
    same for the seed component alone, ``seed_component_corr`` = C / ((K - 1) (S - F)): C the
    runs' cross-products of different abilities' residuals, S their sums of squares, F the
    item-outcome part of S (independent flips, which add to S and not to C), K abilities. 0:
    independent (a macro's seed variance K times below one ability's); 1: one shared effect, as
    `doit.analysis.bootstrap` draws it by default (``seed_corr``). Intervals: the (arm, n)
    groups resampled."""
    groups = [g for a in arms.values() for g in run_groups(a)]
    k = groups[0][0].shape[1]

    def rho(gs) -> tuple[float, float]:
        r = pd.concat([g for g, _ in gs]).to_numpy()
        squares, flips = (r**2).sum(), sum(f for _, f in gs)
        cross = (r.sum(1) ** 2).sum() - squares
        return cross / ((k - 1) * squares), cross / ((k - 1) * (squares - flips))

    rng = np.random.default_rng(seed)
    draws = [rng.integers(0, len(groups), len(groups)) for _ in range(replicates)]
    reps = np.array([rho([groups[i] for i in d]) for d in draws])
    rows = []
    for j, (measure, value) in enumerate(
        zip(("seed_corr_across_abilities", "seed_component_corr"), rho(groups))
    ):
        lo, hi = interval(value, reps[:, j])
        rows.append(
            {
                "arm": "+".join(arms),
                "measure": measure,
                "value": value,
                "lo": lo,
                "hi": hi,
                "diff": np.nan,
                "diff_lo": np.nan,
                "diff_hi": np.nan,
                "points": len(groups),
                "resamples": f"(arm, n) groups of runs ({replicates})",
            }
        )
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "arms", nargs="+", help="NAME=STUDY (a folder or a per-item table); first: the baseline"
    )
    ap.add_argument("--base", default="vanilla_s")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    arms = {}
    for spec in args.arms:
        name, path = spec.split("=", 1)
        arms[name] = load(Path(path), args.base)
    df = compare(arms)
    df = pd.concat([df, pd.DataFrame(seed_correlation(arms))], ignore_index=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.out / "seed_noise.csv") as tmp:
        df.round(4).to_csv(tmp, index=False)
    with pd.option_context("display.width", 200, "display.max_rows", 100):
        print(df.drop(columns="resamples").round(3).to_string(index=False))


if __name__ == "__main__":
    main()
