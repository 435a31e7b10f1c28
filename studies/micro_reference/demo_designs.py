"""What the demo's design can decide, measured on the reference study's own cells (no training).

    python studies/micro_reference/demo_designs.py runs/study/micro_reference \\
        --data data/generated/micro_ref --out studies/micro_reference/demo_designs.csv

The demo (recipes/grids/demo.yaml) fine-tunes vanilla_xs and vanilla_s at n = 0, 4, 16, 64, 256
with training seed 0 and the demo's recipe: the reference study's cells of those bases at seed
0 are the same trainings (same base, data draw, recipe and seed), scored on more items. So
each variant below is the demo at another design, read off the reference's per-item rows:

- ``items``: the first K test items per in-domain ability (100: the demo's today; the C-Eval
  sets whole), the results rows' scores recounted from those items;
- ``seed_prior``: none (intervals over items only, as a one-seed study's are) or the
  reference's measured training-seed SD (the median over abilities, logit units) as the
  prior every point's seed draw uses.

Per variant: the in-domain abilities whose data (and size) class is decided, how many of those
agree with the reference's classes (its three vanilla bases, three seeds, every test item),
and how many sensitivities agree with the reference's fits over the demo's bases
(`doit.analysis.reference.against_reference`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from doit.analysis import reference as ref
from doit.analysis.pipeline import Analysis
from doit.analysis.settings import Settings
from doit.analysis.study import StudyRows, read_study
from doit.data import abilities as ab
from doit.io import atomic_write_text

DEMO_BASES, DEMO_SEED = ("vanilla_xs", "vanilla_s"), 0
ITEMS = (100, 200, 400)


def demo_rows(study: str, items_per_ability: int) -> StudyRows:
    """The reference's rows of the demo's cells (its bases at seed 0), their in-domain test
    scores recounted over the first ``items_per_ability`` items (by idx) of each ability."""
    rows = read_study(study, bases=DEMO_BASES)
    keep = lambda t: t[t["seed"] == DEMO_SEED].reset_index(drop=True)  # noqa: E731
    table, items = keep(rows.table), rows.items
    items = items[items["cell"].isin(set(table["cell"]))]
    rank = items.groupby(["cell", "epoch", "split", "ability"])["idx"].rank(method="first")
    in_domain = items["ability"].isin(ab.ABILITY_KEYS)
    items = items[~in_domain | (rank <= items_per_ability)].reset_index(drop=True)
    counted = items.groupby(["cell", "epoch", "split", "ability"])["correct"].agg(["sum", "size"])
    key = pd.MultiIndex.from_frame(table[["cell", "epoch", "split", "ability"]])
    got = counted.reindex(key)
    table = table.assign(
        n_items=got["size"].to_numpy(), score=100 * got["sum"].to_numpy() / got["size"].to_numpy()
    )
    return StudyRows(table, items, keep(rows.all_rows), rows.notes)


def variant(study: str, n_items: int, seed_sd, reference, replicates: int) -> dict:
    settings = Settings(replicates=replicates, seed_sd=seed_sd)
    a = Analysis(study, settings, study=demo_rows(study, n_items))
    graded = ref.against_reference(a, *reference)
    size = a.sensitivity[a.sensitivity["size_class"].isin(ref.DECIDED)]
    return {
        "test_items": n_items,
        "seed_prior": "none" if seed_sd is None else f"{seed_sd:.3f}",
        "resamples": a.counts.resamples,
        "data_decided": len(graded["decided"]),
        "data_agree": len(graded["agree"]),
        "data_decided_names": " ".join(graded["decided"]),
        "size_decided": int(size["ability"].isin(ab.ABILITY_KEYS).sum()),
        "fits_agree_data": f"{len(graded['fits']['data'])}/{graded['of']['data']}",
        "fits_agree_size": f"{len(graded['fits']['size'])}/{graded['of']['size']}",
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("study")
    p.add_argument("--reference", default="studies/micro_reference", help="its recorded tables")
    p.add_argument("--out", required=True)
    p.add_argument("--replicates", type=int, default=1000)
    args = p.parse_args(argv)
    reference = ref.read_reference(args.reference)
    if reference is None:
        raise SystemExit(f"{args.reference}: no sensitivity.csv and restricted.csv (grade.py)")
    seed_sd = float(np.nanmedian(reference[0]["seed_sd"]))
    rows = [
        variant(args.study, n, prior, reference, args.replicates)
        for n in ITEMS
        for prior in (None, seed_sd)
    ]
    table = pd.DataFrame(rows)
    atomic_write_text(Path(args.out), table.to_csv(index=False))
    print(table.drop(columns="data_decided_names").to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
