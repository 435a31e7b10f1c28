"""What a study's shape lets the analysis compute, and plain sentences for what it cannot.

Small, partial and degenerate studies (one cell, one base, two n, only untuned bases, scores
stuck at 0 or 100) still get every output the analysis can write; these notes go into the
report (and the CLI's output), so an empty table or panel always comes with its reason.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from doit.analysis.bootstrap import ITEMS, PAIRED
from doit.analysis.fits import same_n_rows

NEED_DATA = "data fits need >= 2 distinct n > 0 per base"
NEED_SIZE = "size fits and size_sensitivity need >= 2 bases at the same n"
NEED_PREDICT = (
    "prediction needs >= 3 bases at one n or >= 3 distinct n > 0 in one base "
    "(two to fit, one to hold out)"
)


def shape(points: pd.DataFrame) -> dict:
    """The uniform grid's shape: distinct n > 0 per base, bases per n, base (n = 0) cells."""
    grid = points[same_n_rows(points)]
    n_per_base = {
        b: sorted(int(x) for x in g["n_per_ability"].dropna().unique())
        for b, g in grid.groupby("base", sort=True)
    }
    bases_per_n = {
        int(n): sorted(g["base"].unique()) for n, g in grid.groupby("n_per_ability", sort=True)
    }
    untuned = sorted(points.loc[points["construction"] == "base", "base"].unique())
    return {"n_per_base": n_per_base, "bases_per_n": bases_per_n, "untuned": untuned}


def seed_notes(counts) -> list[str]:
    """What the intervals' training-seed part rests on, where it is not measured."""
    table = counts.seed_table
    prior = table[table["resamples"].str.startswith("items and a seed prior")]
    corr = []
    if counts.seed_corr < 1 and counts.seed_drawn:
        corr = [
            f"A training's seed draws are correlated {counts.seed_corr:g} across its abilities "
            "(--seed-corr; 1 would move them all together): the seed part of a macro's "
            "interval rests on that value."
        ]
    if len(prior):
        return [
            f"No grid point has >= 2 training seeds for {len(prior)} of {len(table)} "
            f"abilities: their intervals rest on the seed prior --seed-sd "
            f"{prior['seed_sd'].iloc[0]:g} (logit units), not on a measured seed variance.",
            *corr,
        ]
    if corr:
        return corr
    if (table["resamples"] == ITEMS).any():
        return [
            "Intervals cover item sampling only: no grid point has >= 2 training seeds and "
            "no --seed-sd was given, so they omit seed-to-seed variation (--seed-sd gives "
            "a prior: doit/analysis/README.md, Intervals)."
        ]
    return []


def study_notes(a) -> list[str]:
    """Sentences for the report: what could not be computed, and why."""
    notes = []
    method = a.counts.method
    if method != PAIRED:
        notes.append(
            f"No paired item bootstrap: {method}; CIs on differences between cells are "
            "wider than a paired bootstrap's."
        )
    notes += seed_notes(a.counts)
    chosen = a.settings
    if chosen.formulation == "max" and chosen.formulation_split == chosen.split:
        notes.append(
            f"The formulation of each ability was chosen on {chosen.split}, the split the fits "
            f"are judged on (--formulation-split {chosen.split}): its scores favour the "
            "formulation that "
            "scored best on these very items."
        )
    cells = a.selected.drop_duplicates("cell")
    tuned = cells[cells["construction"] != "base"]
    if len(tuned) and tuned["fallback"].any():
        notes.append(
            f"{int(tuned['fallback'].sum())} of {len(tuned)} fine-tuned cell(s) fell back "
            f"to their last epoch (the {a.settings.rule!r} rule found no eligible epoch: "
            "fewer than 5 epochs or no validation rows)."
        )
    s = shape(a.counts.points)
    if not s["n_per_base"]:
        notes.append(
            "No fine-tuned uniform curated cells (n > 0): no fits, sensitivities or "
            "predictions; the figures show the observed scores only."
        )
        return notes
    short = {b: ns for b, ns in s["n_per_base"].items() if len(ns) < 2}
    if short:
        which = "; ".join(f"base {b} has {len(ns)} (n = {ns[0]})" for b, ns in short.items())
        whole = "no data fits" if len(short) == len(s["n_per_base"]) else "those bases not fitted"
        notes.append(
            f"{NEED_DATA}: {which} ({whole}; data_sensitivity and saturation_n "
            "empty where no base has a fit)."
        )
    most_bases = max(len(b) for b in s["bases_per_n"].values())
    if most_bases < 2:
        bases = sorted(s["n_per_base"])
        notes.append(
            f"{NEED_SIZE}: this study has {len(bases)} ({', '.join(bases)}); "
            "size_sensitivity is empty."
        )
    most_n = max(len(ns) for ns in s["n_per_base"].values())
    if most_bases < 3 and most_n < 3:
        notes.append(
            f"{NEED_PREDICT}: this study has at most {most_bases} base(s) at one n and "
            f"{most_n} n per base; predictions.csv is empty."
        )
    fits = list(a.curves.data.values()) + list(a.curves.size.values())
    if fits and all(f.n_points == 2 for f in fits):
        notes.append(
            "Every fit has only 2 points: both forms pass through them, so the form "
            "choice (gap 0) and the curve between the points are not informed by the "
            "data; only the end-to-end slope is."
        )
    if s["untuned"]:
        notes.append(
            "n = 0 (untuned base) cells are no point on the log-n axis (log 0 is "
            "undefined): each is its base's data curves' floor (their n -> 0 value, "
            "resampled with the other points), drawn at the left edge of the data "
            "figures, and the reference of the transference proxy."
        )
    stuck = [r["ability"] for _, r in a.sensitivity.iterrows() if "no item variance" in r["note"]]
    if stuck:
        notes.append(
            f"Scores only at 0 or 100 in every fitted cell of {', '.join(stuck)}: no item "
            "variance, so their CIs are degenerate and their groups undetermined."
        )
    return notes + out_of_reach(a.sensitivity, a.settings.delta)


def out_of_reach(sens: pd.DataFrame, delta: float) -> list[str]:
    """A sentence per axis naming the abilities whose sensitivity was measured but whose
    resistance the design could not have shown (``resistant_reachable_*`` false)."""
    notes = []
    for axis in ("data", "size"):
        reachable = sens[f"resistant_reachable_{axis}"].astype(bool)
        blind = sens[sens[f"{axis}_sensitivity"].notna() & ~reachable]
        if len(blind):
            notes.append(
                f"Resistance to {axis} is out of this design's reach for "
                f"{', '.join(blind['ability'])}: the expected 90% half-width (z_0.95 x the "
                f"bootstrap SE) is at least delta = {delta:g} points, so not even a true zero "
                f"would be called resistant; undecided, their {axis} class is 'not decidable "
                f"with this design' (more items, seeds or grid points shrink the SE; mde_{axis} "
                "is the effect the design calls responsive with 80% probability)."
            )
    return notes


def ability_note(data_fits: list, size_fits: list, most_n: int, most_bases: int):
    """(note, degenerate) for one ability's row of sensitivity.csv; ``most_n``: the most
    distinct n > 0 of any base, ``most_bases``: the most bases at any n."""
    parts = []
    if not data_fits:
        parts.append(f"no data fit ({NEED_DATA}: {most_n} here)")
    if not size_fits:
        parts.append(f"no size fit ({NEED_SIZE}: {most_bases} here)")
    fits = data_fits + size_fits
    degenerate = bool(fits) and all(np.all((f.k == 0) | (f.k == f.m)) for f in fits)
    if degenerate:
        parts.append("every fitted score is 0 or 100: no item variance, CI degenerate")
    return "; ".join(parts), degenerate
