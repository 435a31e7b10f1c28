"""Why an axis's interval under-covers: many planted worlds, each sensitivity's error against
its own bootstrap SE (the size-axis diagnosis in doit/analysis/README.md, "Coverage").

    .venv/bin/python bench/size_coverage.py DESIGN [--seed-sd 0.4] [--worlds 60]
        [--replicates 200] [--levers K] [--prior 1] [--axis size|data]

Worlds ``rng`` 0..W-1 of ``synthetic.planted_world(DESIGN)`` (each with its own levers, as the
coverage bench draws them; with ``--levers K`` every world keeps world K's levers and only the
item and seed draws vary), analysed in memory (select, bootstrap, the axis's fits only: no
files). Per call (world x ability): z = (estimate - planted) / se, se the SD of the
replicates. Printed: coverage of the package's interval (bias-corrected percentile), of the
plain percentile interval and of estimate +- 1.96 se, each with its Wilson 95% interval; z's
mean (bias in SEs) and SD (1: the SE is calibrated); the share of replicates below the point
(the z0 of the bias correction) and its spread against a binomial share's; z's SD where the
log-linear form wins most series. ``--prior X``: ``--seed-sd`` at X times the world's planted
seed SD on the analysis's scale (its ``seed_sd_score`` RMS).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from doit.analysis import synthetic  # noqa: E402
from doit.analysis.bootstrap import bootstrap_counts  # noqa: E402
from doit.analysis.fits import _fit, _groups, same_n_rows, untuned_floor  # noqa: E402
from doit.analysis.select import select_checkpoints  # noqa: E402
from doit.analysis.sensitivity import axis_decision, slope  # noqa: E402


def calls(world, replicates: int, seed: int, prior: float | None, axis: str) -> list[dict]:
    """One row per ability of ``world``: its estimate, interval, SE and planted value."""
    if prior is not None:
        prior = prior * float((world.truth["seed_sd_score"] ** 2).mean() ** 0.5)
    counts = bootstrap_counts(
        select_checkpoints(world.table), world.items, replicates, seed, ("test",), prior
    )
    pts = counts.points
    by = ["ability", "n_per_ability"] if axis == "size" else ["ability", "base"]
    fits = {}
    for key, idx in _groups(pts, same_n_rows(pts), by):
        floor = None if axis == "size" else untuned_floor(counts, *key)
        column, base = ("params", 2.0) if axis == "size" else ("n_per_ability", 4.0)
        fits[key] = _fit(counts, idx, column, base, floor)
    truth, rows = world.truth.set_index("ability"), []
    for a in truth.index:
        mine = [f for k, f in fits.items() if k[0] == a and f is not None]
        point, reps = slope(mine, 2.0 if axis == "size" else 4.0)
        d = axis_decision(point, reps, truth.loc[a, "delta"])
        plo, phi = np.nanpercentile(reps, [2.5, 97.5])
        rows.append(
            dict(
                ability=a,
                kind=truth.loc[a, "kind"],
                planted=truth.loc[a, f"{axis}_sensitivity"],
                estimate=point,
                lo=d["_lo"],
                hi=d["_hi"],
                plo=plo,
                phi=phi,
                se=float(np.nanstd(reps, ddof=1)),
                below=float(np.mean(reps < point)),
                loglinear=float(np.mean([f.chosen == "loglinear" for f in mine])),
            )
        )
    return rows


def share(hits: pd.Series) -> str:
    ci = binomtest(int(hits.sum()), len(hits)).proportion_ci(0.95, method="wilson")
    return f"{hits.mean():.3f} [{ci.low:.3f}, {ci.high:.3f}] of {len(hits)}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("design", choices=sorted(synthetic.DESIGNS))
    p.add_argument("--seed-sd", type=float, default=0.4, help="the planted seed SD (logit)")
    p.add_argument("--worlds", type=int, default=60)
    p.add_argument("--replicates", type=int, default=200)
    p.add_argument("--levers", type=int, help="keep this world's levers in every world")
    p.add_argument("--prior", type=float, help="--seed-sd as a multiple of the planted one")
    p.add_argument("--axis", choices=("size", "data"), default="size")
    args = p.parse_args()
    fixed = None
    if args.levers is not None:
        fixed = synthetic.planted_world(args.design, seed_sd=args.seed_sd, rng=args.levers).levers
    rows = []
    for i in range(args.worlds):
        draws = i if fixed is None else 1000 + i  # fixed levers: fresh items and seeds
        world = synthetic.planted_world(args.design, fixed, seed_sd=args.seed_sd, rng=draws)
        rows += [
            dict(world=i, **r) for r in calls(world, args.replicates, i, args.prior, args.axis)
        ]
    df = pd.DataFrame(rows)
    z = (df["estimate"] - df["planted"]) / df["se"]
    inside = lambda lo, hi: (lo <= df["planted"]) & (df["planted"] <= hi)  # noqa: E731
    print(f"{args.axis} axis, design {args.design}, seed_sd {args.seed_sd:g}, {args.worlds} worlds")
    print(f"  package interval: {share(inside(df['lo'], df['hi']))}")
    print(f"  plain percentile: {share(inside(df['plo'], df['phi']))}")
    print(
        f"  estimate +- 1.96 se: {share(inside(df['estimate'] - 1.96 * df['se'], df['estimate'] + 1.96 * df['se']))}"
    )
    print(f"  z: mean {z.mean():+.3f}, SD {z.std():.3f}")
    noise = (0.25 / args.replicates) ** 0.5
    print(
        f"  share below the point: mean {df['below'].mean():.3f}, SD {df['below'].std():.3f} (binomial {noise:.3f})"
    )
    most = df["loglinear"] > 0.5
    print(
        f"  z SD where log-linear wins most series: {z[most].std():.3f} ({most.mean():.0%} of calls); elsewhere {z[~most].std():.3f}"
    )
    print(
        pd.DataFrame({"z": z, "kind": df["kind"]})
        .groupby("kind")["z"]
        .agg(["mean", "std", "size"])
        .round(3)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
