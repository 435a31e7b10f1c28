"""The variance model against a measured study: the model's SE of each sensitivity at the
study's design (its bases, n, items and seeds), with the inputs measured on a pilot (the study
itself by default), beside the SE the study's analysis measured (the SD of its bootstrap
replicates, from sensitivity.csv's mde: se = (mde - delta) / (z_0.975 + z_0.8)).

    python studies/power/model_check.py runs/study/demo             # the demo as its own pilot
    python studies/power/model_check.py runs/study/micro_reference --pilot runs/study/demo \
        --bases vanilla_xs,vanilla_s,vanilla_l   # the reference's design, predicted from the demo
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
    p.add_argument("--analysis", type=Path, help="the study's analysis (default STUDY/analysis)")
    p.add_argument(
        "--pilot", type=Path, help="the study whose cells give the inputs (default STUDY)"
    )
    p.add_argument(
        "--seed-sd",
        type=float,
        help="logit; default: the analysis's own measured "
        "largest (own pilot) or the pilot's, else the prior",
    )
    p.add_argument("--bases", help="comma list: the bases the analysis fitted (default all)")
    a = p.parse_args()
    analysis = a.analysis or a.study / "analysis"
    rows = last_epochs(read_results(a.study))
    if a.bases:
        rows = rows[rows["base"].isin(a.bases.split(","))]
    measured = pd.read_csv(analysis / "sensitivity.csv").set_index("ability")
    pilot = a.pilot or a.study
    seed_sd = a.seed_sd
    if seed_sd is None and pilot == a.study:
        seed_sd = float(np.nan_to_num(measured["seed_sd"].fillna(0).max()))
    prows = rows if pilot == a.study else last_epochs(read_results(pilot))
    inputs = pilot_inputs(prows, read_items(pilot), str(pilot), seed_sd=seed_sd)
    trained = uniform_rows(rows)
    items = trained.groupby("ability")["n_items"].median().astype(int).to_dict()
    bases = trained.groupby("base")["params"].first().astype(float).to_dict()
    ns = tuple(sorted(int(n) for n in trained["n_per_ability"].unique()))
    seeds = int(trained.groupby(["base", "n_per_ability", "ability"]).size().max())
    print(
        f"pilot {pilot}, bases {bases}, n {ns}, seeds {seeds}, seed_sd {seed_sources(inputs)}, delta {measured['delta'].iloc[0]:g}"
    )
    print(
        f"{'ability':<17} {'items':>5} {'rho':>5} {'data model':>10} {'measured':>8} {'ratio':>5}"
        f" {'size model':>10} {'measured':>8} {'ratio':>5}"
    )
    ratios = []
    for ability, (i, _) in inputs.items():
        if ability not in measured.index:
            continue
        shape = V.Shape(bases, ns, items[ability], seeds)
        delta = float(measured.loc[ability, "delta"])
        line = f"{ability:<17} {items[ability]:>5} {i.item_corr:>5.2f}"
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


def seed_sources(inputs) -> str:
    """The seed SDs used (logit): their range and where they came from."""
    sds = [i.seed_sd for i, _ in inputs.values()]
    said = sorted({info["seed_source"] for _, info in inputs.values()})
    return f"{min(sds):.2f}-{max(sds):.2f} ({', '.join(said)})"


if __name__ == "__main__":
    main()
