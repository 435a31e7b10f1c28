"""The variance model against a measured study: the demo study (`make demo`, runs/study/demo) as
its own pilot, the model's SE of each sensitivity beside the SE its analysis measured (the SD of
its bootstrap replicates, from sensitivity.csv's mde: se = (mde - delta) / (z_0.975 + z_0.8)).

    python studies/power/demo_check.py runs/study/demo [--analysis runs/study/demo/analysis]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from doit.grid.results import read_items, read_results
from doit.stats import variance as V
from doit.stats.pilot import last_epochs, pilot_inputs, uniform_rows
from doit.stats.power import se_for


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("study", type=Path)
    p.add_argument("--analysis", type=Path)
    a = p.parse_args()
    analysis = a.analysis or a.study / "analysis"
    rows = last_epochs(read_results(a.study))
    measured = pd.read_csv(analysis / "sensitivity.csv").set_index("ability")
    seed_sd = float(np.nan_to_num(measured["seed_sd"].fillna(0).max()))
    inputs = pilot_inputs(rows, read_items(a.study), str(a.study), seed_sd=seed_sd)
    trained = uniform_rows(rows)
    bases = trained.groupby("base")["params"].first().astype(float).to_dict()
    ns = tuple(sorted(int(n) for n in trained["n_per_ability"].unique()))
    seeds = int(trained.groupby(["base", "n_per_ability", "ability"]).size().max())
    print(
        f"bases {bases}, n {ns}, seeds {seeds}, seed_sd {seed_sd:g}, delta {measured['delta'].iloc[0]:g}"
    )
    print(
        f"{'ability':<17} {'items':>5} {'rho':>5} {'data model':>10} {'measured':>8} {'ratio':>5}"
        f" {'size model':>10} {'measured':>8} {'ratio':>5}"
    )
    ratios = []
    for ability, (i, info) in inputs.items():
        if ability not in measured.index:
            continue
        shape = V.Shape(bases, ns, info["items"], seeds)
        delta = float(measured.loc[ability, "delta"])
        line = f"{ability:<17} {info['items']:>5} {i.item_corr:>5.2f}"
        for axis, se in (("data", V.data_se(shape, i)), ("size", V.size_se(shape, i))):
            got = se_for(float(measured.loc[ability, f"mde_{axis}"]), delta)
            ratios.append(se / got)
            line += f" {se:>10.2f} {got:>8.2f} {se / got:>5.2f}"
        print(line)
    r = np.array(ratios)
    print(
        f"model / measured: median {np.median(r):.2f}, range {r.min():.2f}-{r.max():.2f}, "
        f"within 25%: {np.mean(np.abs(r - 1) <= 0.25):.2f} of {len(r)}"
    )


if __name__ == "__main__":
    main()
