"""The curriculum's planted check (#32): on `synthetic.planted_world` studies with known curves,
how much of the exact optimum's planted gain over uniform the default marginal earns, how often
it beats the reach-4 policy, and whether its predicted gain and interval hold.

    python bench/curriculum_oracle.py --studies 20 [--designs a,b] [--budgets 5,8]
        [--risks 0,0.5,1] [--replicates 200] [--jobs 2] [--seed-prior] [--loo 16,64]
        [--out runs/bench/curriculum_oracle.csv]

Every world has ten abilities with kinds fixed per ability (``KINDS``): 3 still rising past the
grid's largest n (smooth, planted data sensitivity 6-15 points per 4x), 2 with small real slopes
inside +-delta (smooth, 0.5-1.5 per 4x), 2 flat (size_only), 1 plateau just past the grid, 1 dip,
1 interfered; seed effect 0.4 logit per trained cell. Design ``a`` (100 items per cell, 1 seed)
and ``b`` (400 items, 2 seeds) of `synthetic.DESIGNS`; the target is the largest base; budgets
are multiples of the grid's largest n (256); pools never bind. No leave-one-out cells by default:
transfer is off, so the interfered ability's loss to the others' items is what no curve sees;
``--loo 16,64`` adds them on the target (`synthetic.Design.loo`).

Per world, budget and policy (``marginal`` at each ``--risks`` lambda, evidence-bounded, and at
``--reach 4``): the realised gain is the planted expected macro (`PlantedWorld.expected`, noise-
free, item difficulties averaged) of its counts minus uniform's; the optimum is the same DP
(`optimise.maximise`) over the planted values themselves, counts 1..budget, and the *bounded*
optimum the same with no ability past the grid's largest n (what reach 1 allows: the best any
evidence-bounded policy can do; `bounded_share` is its share of the optimum's gain). Written:
one row per (design, study, budget, policy) with counts; printed: the summary per (design,
budget, policy): share of the optimum's gain (mean realised / mean optimum) and of the bounded
optimum's, the share of studies at or above the reach-4 policy, mean predicted - realised, the
predicted-gain interval's coverage of realised.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from doit.analysis import synthetic as syn
from doit.analysis.curriculum import Options, make
from doit.analysis.curriculum.optimise import maximise
from doit.analysis.curriculum.options import SETTINGS
from doit.analysis.pipeline import Analysis
from doit.io import atomic_write_text

# ability -> (kind, data-sensitivity range or None for the kind's own draw)
KINDS = {
    "biology": ("smooth", (6.0, 15.0)),
    "history": ("smooth", (6.0, 15.0)),
    "code": ("smooth", (6.0, 15.0)),
    "creative_writing": ("smooth", (0.5, 1.5)),
    "chinese": ("smooth", (0.5, 1.5)),
    "understanding": ("size_only", None),
    "role_play": ("size_only", None),
    "reasoning": ("plateau", None),
    "math": ("dip", None),
    "ethics": ("interference", None),
}
POOL = 100_000
SEED_SD = 0.4


def world(design: str, study: int, loo: tuple = ()) -> syn.PlantedWorld:
    d = replace(syn.DESIGNS[design], loo=tuple(loo))
    rng = np.random.default_rng([32, study])
    levers = {}
    for a, (kind, data) in KINDS.items():
        target = None if data is None else float(rng.uniform(*data))
        levers[a] = syn.draw_levers(kind, syn.CHANCE[a], d, rng, data=target)
    return syn.planted_world(d, levers, seed_sd=SEED_SD, rng=study)


def planted_values(w: syn.PlantedWorld, base: str, budget: int) -> list[np.ndarray]:
    """Per ability, its planted score (points) at counts 0..budget beside the rest."""
    low = min(w.design.bases.values())
    doublings = np.log2(w.design.bases[base] / low)
    n = np.arange(budget + 1, dtype=float)
    k = len(w.levers)
    return [
        100 * lev.expected(doublings, n, np.maximum(budget - n, 0) / (k - 1))
        for lev in w.levers.values()
    ]


def planted_macro(values: list[np.ndarray], counts: dict) -> float:
    return float(np.mean([v[counts[a]] for a, v in zip(KINDS, values)]))


def exact_optimum(values: list[np.ndarray], budget: int, most: int | None = None) -> dict:
    """The counts (1..``most`` each, all of ``budget``) that maximise the planted macro."""
    top = len(values[0]) if most is None else most + 1
    best = maximise([v[1:top] for v in values], budget - len(values))
    return {ab: 1 + x for ab, x in zip(KINDS, best)}


def one(args) -> list[dict]:
    design, study, budgets, risks, replicates, prior, loo = args
    w = world(design, study, loo)
    base = max(w.design.bases, key=w.design.bases.get)
    settings = replace(SETTINGS, replicates=replicates, seed=study)
    if prior and w.design.seeds < 2:  # the planted seed SD on the score's logit, as a prior
        settings = replace(settings, seed_sd=float(w.truth["seed_sd_score"].mean()))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        a = Analysis(str(w.write(Path(tmp) / "study")), settings)
        top = max(w.design.ns)
        for mult in budgets:
            budget = int(mult * top)
            values = planted_values(w, base, budget)
            optimum = exact_optimum(values, budget)
            bounded = exact_optimum(values, budget, top)  # no ability past the grid's n
            variants = [(f"marginal risk={r:g}", None, r) for r in risks]
            variants += [(f"reach4 risk={r:g}", 4.0, r) for r in risks]
            uniform = None
            for name, reach, risk in variants:
                o = Options(
                    budget=budget,
                    base=base,
                    pools=dict.fromkeys(KINDS, POOL),
                    reach=reach,
                    risk=risk,
                    settings=settings,
                )
                r = make(a, o)
                uniform = r.baseline.counts
                counts = r.allocations["marginal"].counts
                macro = r.table[(r.table["policy"] == "marginal") & (r.table["ability"] == "macro")]
                m = macro.iloc[0]
                base_score = planted_macro(values, uniform)
                rows.append(
                    dict(
                        design=design,
                        study=study,
                        budget=budget,
                        policy=name,
                        realised=planted_macro(values, counts) - base_score,
                        optimum=planted_macro(values, optimum) - base_score,
                        bounded=planted_macro(values, bounded) - base_score,
                        predicted=float(m["gain"]),
                        predicted_lo=float(m["gain_lo"]),
                        predicted_hi=float(m["gain_hi"]),
                        extrapolated=bool(m["extrapolated"]),
                        counts=";".join(f"{k}={v}" for k, v in counts.items()),
                        optimum_counts=";".join(f"{k}={v}" for k, v in optimum.items()),
                    )
                )
    return rows


def summary(table: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (design, budget, policy), g in table.groupby(["design", "budget", "policy"], sort=True):
        risk = policy.split("risk=")[1]
        other = table[
            (table["design"] == design)
            & (table["budget"] == budget)
            & (table["policy"] == f"reach4 risk={risk}")
        ].set_index("study")["realised"]
        mine = g.set_index("study")["realised"]
        covered = (g["predicted_lo"] <= g["realised"]) & (g["realised"] <= g["predicted_hi"])
        out.append(
            dict(
                design=design,
                budget=budget,
                policy=policy,
                studies=len(g),
                share_of_optimum=g["realised"].mean() / g["optimum"].mean(),
                share_of_bounded=g["realised"].mean() / g["bounded"].mean(),
                bounded_share=g["bounded"].mean() / g["optimum"].mean(),
                at_least_reach4=np.nan
                if policy.startswith("reach4")
                else float((mine >= other.reindex(mine.index) - 1e-9).mean()),
                predicted_minus_realised=(g["predicted"] - g["realised"]).mean(),
                coverage=float(covered.mean()),
                realised=g["realised"].mean(),
                optimum=g["optimum"].mean(),
            )
        )
    return pd.DataFrame(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--studies", type=int, default=20)
    p.add_argument("--designs", default="a,b")
    p.add_argument("--budgets", default="5,8", help="multiples of the grid's largest n")
    p.add_argument("--risks", default="0,0.5,1")
    p.add_argument("--replicates", type=int, default=200)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument(
        "--seed-prior",
        action="store_true",
        help="one-seed designs: give the planted seed SD (on the score's logit) as --seed-sd",
    )
    p.add_argument(
        "--loo",
        default="",
        help="n values of leave-one-out cells on the target base (e.g. 16,64): the transfer term",
    )
    p.add_argument("--out", type=Path, default=Path("runs/bench/curriculum_oracle.csv"))
    a = p.parse_args(argv)
    loo = tuple(int(x) for x in a.loo.split(",") if x.strip())
    budgets = [float(x) for x in a.budgets.split(",")]
    risks = [float(x) for x in a.risks.split(",")]
    tasks = [
        (d, s, budgets, risks, a.replicates, a.seed_prior, loo)
        for d in a.designs.split(",")
        for s in range(a.studies)
    ]
    with ProcessPoolExecutor(a.jobs) as pool:
        rows = [r for part in pool.map(one, tasks) for r in part]
    table = pd.DataFrame(rows)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(a.out, table.to_csv(index=False))
    print(summary(table).to_markdown(index=False, floatfmt=".2f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
