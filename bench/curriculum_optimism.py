"""How optimistic the curriculum's predicted gain is, and what a bootstrap optimism correction
would take off (#32; a measurement, not the library's estimator).

    python bench/curriculum_optimism.py --studies 20 [--designs a,b] [--budget 5]
        [--choices 60] [--jobs 2] [--out runs/bench/curriculum_optimism.csv]

On `bench/curriculum_oracle.py`'s planted worlds (its ``world``: ten abilities of fixed kinds,
seed effect 0.4 logit per trained cell; a one-seed design is given the planted seed SD as its
``--seed-sd`` prior), the default marginal policy's predicted macro gain over uniform three
ways, each against the realised (planted, noise-free) gain of the counts it wrote:

- ``plug_in``: the fits of every item at the chosen counts (the optimum's own estimate);
- ``crossfit``: the library's (`doit.analysis.curriculum.crossfit`): chosen on one half of the
  items, predicted by the other half's curves, both ways;
- ``corrected``: plug-in minus the bootstrap optimism (Efron's; Harrell's for model
  validation): on each of ``--choices`` replicates of the fitted curves (items and the seed
  draws), the policy's objective is maximised again, and optimism is the mean over replicates
  of (the replicate's own predicted gain at its choice - the point curves' predicted gain at
  that choice). It sees every noise the replicates carry, the seed draws included, which the
  two item halves share and so cannot remove.

Printed: means per design of each prediction, its error (prediction - realised) and the
optimism.
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

sys.path.insert(0, str(Path(__file__).parent))
import curriculum_oracle as oracle  # noqa: E402  the planted worlds and their values

from doit.analysis.curriculum import Options, make  # noqa: E402
from doit.analysis.curriculum.optimise import maximise  # noqa: E402
from doit.analysis.curriculum.policies import _bounds  # noqa: E402
from doit.analysis.pipeline import Analysis  # noqa: E402
from doit.io import atomic_write_text  # noqa: E402


def optimism(ev, risk: float, chosen: dict, uniform: dict, choices: int) -> tuple[float, float]:
    """(plug-in predicted macro gain of ``chosen``, the mean optimism over ``choices``
    replicates), for marginal's objective at ``risk`` (the same bounds, floors and penalty)."""
    m, free = ev.model, list(ev.abilities)
    high, _ = _bounds(ev, {k: m.grid_max for k in free}, free)
    total = sum(uniform.values())
    w = ev.weights / ev.weights.sum()
    low = {k: ev.lower[k] for k in free}
    counts = {k: np.arange(low[k], high[k] + 1, dtype=float) for k in free}
    point = {k: m.values(k, counts[k], total) for k in free}
    reps = {k: m.replicates(k, counts[k], total) for k in free}
    penalty = {k: risk * reps[k].std(0, ddof=1) for k in free}

    def gain(values: dict, x: dict) -> float:
        return sum(
            w[i] * (values[k][x[k] - low[k]] - values[k][uniform[k] - low[k]])
            for i, k in enumerate(free)
        )

    spare = ev.options.budget - sum(low.values())
    out = []
    for b in range(min(choices, len(reps[free[0]]))):
        x = maximise([w[i] * (reps[k][b] - penalty[k]) for i, k in enumerate(free)], spare)
        xb = {k: low[k] + xi for k, xi in zip(free, x)}
        out.append(gain({k: reps[k][b] for k in free}, xb) - gain(point, xb))
    return gain(point, chosen), float(np.mean(out))


def one(args) -> dict:
    design, study, mult, choices, replicates = args
    w = oracle.world(design, study)
    base = max(w.design.bases, key=w.design.bases.get)
    settings = replace(oracle.SETTINGS, replicates=replicates, seed=study)
    if w.design.seeds < 2:  # the planted seed SD on the score's logit, as a prior
        settings = replace(settings, seed_sd=float(w.truth["seed_sd_score"].mean()))
    with tempfile.TemporaryDirectory() as tmp:
        a = Analysis(str(w.write(Path(tmp) / "study")), settings)
        budget = int(mult * max(w.design.ns))
        values = oracle.planted_values(w, base, budget)
        pools = dict.fromkeys(oracle.KINDS, oracle.POOL)
        r = make(a, Options(budget=budget, base=base, pools=pools, settings=settings))
        uniform, chosen = r.baseline.counts, r.allocations["marginal"].counts
        macro = r.table[(r.table["policy"] == "marginal") & (r.table["ability"] == "macro")]
        plug, opt = optimism(r.evidence, r.options.risk, chosen, uniform, choices)
    realised = oracle.planted_macro(values, chosen) - oracle.planted_macro(values, uniform)
    return dict(
        design=design,
        study=study,
        budget=budget,
        realised=realised,
        plug_in=plug,
        crossfit=float(macro.iloc[0]["gain"]),
        optimism=opt,
        corrected=plug - opt,
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--studies", type=int, default=20)
    p.add_argument("--designs", default="a,b")
    p.add_argument("--budget", type=float, default=5.0, help="a multiple of the grid's largest n")
    p.add_argument("--choices", type=int, default=60, help="replicates the policy re-chooses on")
    p.add_argument("--replicates", type=int, default=200)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path("runs/bench/curriculum_optimism.csv"))
    a = p.parse_args(argv)
    tasks = [
        (d, s, a.budget, a.choices, a.replicates)
        for d in a.designs.split(",")
        for s in range(a.studies)
    ]
    with ProcessPoolExecutor(a.jobs) as pool:
        table = pd.DataFrame(list(pool.map(one, tasks)))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(a.out, table.to_csv(index=False))
    for c in ("plug_in", "crossfit", "corrected"):
        table[f"{c}_error"] = table[c] - table["realised"]
    cols = [
        "realised",
        "plug_in",
        "crossfit",
        "corrected",
        "optimism",
        "plug_in_error",
        "crossfit_error",
        "corrected_error",
    ]
    print(table.groupby(["design", "budget"])[cols].mean().to_markdown(floatfmt="+.2f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
