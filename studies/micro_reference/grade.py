"""Grade the micro reference study against the corpus's levers (doit.analysis.reference) and
write its committed outputs.

    python studies/micro_reference/grade.py runs/study/micro_reference \\
        --data data/generated/micro_ref --out studies/micro_reference

Writes into --out: results.csv.gz and results.items.csv.gz (the study's tables; gunzipped, the
table pair `doit analysis run results.csv` reads, for re-analysis
without retraining), sensitivity.csv (fitted over the vanilla bases), differences.csv
(value-residual - vanilla at s), restricted.csv (the sensitivities, SEs and classes of the fits
over the demo's bases only, which `make demo` is graded against), bounds.csv, plateaus.csv, split_half.csv and grading.json,
and prints the issue's "Done when" lines. Cells not run yet are simply absent.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from doit.analysis import reference as ref
from doit.analysis.pipeline import Analysis
from doit.analysis.settings import Settings
from doit.grid.results import read_items, read_results
from doit.io import atomic_write_gzip_text, atomic_write_text

VANILLA = ("vanilla_xs", "vanilla_s", "vanilla_l")
DEMO_BASES = ("vanilla_xs", "vanilla_s")  # recipes/grids/demo.yaml's, at its n (NS)
REFERENCE, OTHERS = "vanilla_s", ("resformer_s", "svformer_s")
NS = (0, 4, 16, 64, 256)
HALVES = ({0, 1}, {2})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("study")
    p.add_argument("--data", required=True, help="the corpus (its ground_truth.json)")
    p.add_argument("--out", required=True)
    p.add_argument("--replicates", type=int, default=1000)
    args = p.parse_args(argv)
    out = Path(args.out)
    truth = ref.truth_of(json.loads((Path(args.data) / "ground_truth.json").read_text()), "text")
    write_tables(args.study, out)

    present = set(read_results(args.study)["base"])
    ladder = Analysis(
        args.study, Settings(replicates=args.replicates, bases=_have(VANILLA, present))
    )
    grading = {"dose": ref.dose_recovery(ladder.curves, truth)}
    grading["classes"] = ref.classes_decided(ladder.sensitivity)
    write_csv(out / "sensitivity.csv", ladder.sensitivity)
    checks = ref.bounds(ladder.counts, ladder.fits, truth)
    write_csv(out / "bounds.csv", checks)
    grading["bounds_contradicted"] = checks[checks["contradicted"]].to_dict("records")
    ceilings = checks[checks["bound"] == "ceiling"]
    grading["bounds_checked"] = {
        "ceiling": len(ceilings),
        "beyond_pointwise": int(ceilings["beyond"].sum()),
    }
    below = checks[(checks["bound"] == ref.CHANCE) & checks["beyond"]]
    grading["fitted_floors_below_chance"] = below.to_dict("records")
    write_csv(out / "plateaus.csv", ref.plateaus(ladder.counts, truth, VANILLA))

    demo = _have(DEMO_BASES, present)  # the demo's bases and n: what its fits are held to
    restricted = Analysis(args.study, Settings(replicates=args.replicates, bases=demo))
    write_csv(out / "restricted.csv", ref.estimates(restricted))

    pair_bases = _have((REFERENCE, *OTHERS), present)
    if len(pair_bases) > 1:
        pairs = Analysis(args.study, Settings(replicates=args.replicates, bases=pair_bases))
        diffs = ref.architecture_differences(pairs.counts, REFERENCE, pair_bases[1:], NS)
        write_csv(out / "differences.csv", diffs)
        grading["resamples"] = pairs.counts.resamples

    seed_sd = float(np.nanmedian(ladder.counts.seed_table["seed_sd"]))  # the one-seed half's prior
    halves = ref.split_half(ladder, HALVES, seed_sd if np.isfinite(seed_sd) else None)
    write_csv(out / "split_half.csv", halves)
    scored = halves[np.isfinite(halves["z"])]
    grading["split_half"] = {"agree": int(scored["agree"].sum()), "of": len(scored)}
    grading["split_half"]["seed_sd_prior"] = seed_sd
    atomic_write_text(
        out / "grading.json", json.dumps(finite(grading), indent=1, default=_plain) + "\n"
    )
    print("\n".join(done_when(grading)))
    return 0


def done_when(g: dict) -> list[str]:
    """The issue's targets, one line each, with the numbers."""
    d, c, s = g["dose"], g["classes"], g["split_half"]
    share = s["agree"] / s["of"] if s["of"] else float("nan")
    return [
        f"dose lever: Spearman {d['spearman']:.2f} [{d['spearman_lo']:.2f}, "
        f"{d['spearman_hi']:.2f}] over {len(d['abilities'])} learnable abilities (>= 0.7; "
        f"beyond the grid: {', '.join(d['beyond_grid']) or 'none'})",
        f"data classes decided: {len(c['data'])} of {c['of']} (>= 8)",
        f"size classes decided: {len(c['size'])} of {c['of']} (>= 5)",
        f"planted bounds contradicted: {len(g['bounds_contradicted'])} of "
        f"{g['bounds_checked']['ceiling']} ceiling checks at family-wise 5% (0; a 95% interval "
        f"wholly above: {g['bounds_checked']['beyond_pointwise']})",
        f"split half, seeds 0-1 vs 2: {s['agree']} of {s['of']} agree ({share:.0%}; >= 90%)",
    ]


def write_tables(study: str, out: Path) -> None:
    """The results and per-item tables, gzip-compressed CSV (the same bytes for the same rows)."""
    for name, table in (("results", read_results(study)), ("results.items", read_items(study))):
        if table is None:
            continue
        atomic_write_gzip_text(out / f"{name}.csv.gz", table.to_csv(index=False))


def write_csv(path: Path, table) -> None:
    atomic_write_text(path, table.to_csv(index=False, float_format="%.4g"))


def finite(value):
    """``value`` with every non-finite float as None (strict JSON; a half-rise n beyond the
    grid is listed in ``dose.beyond_grid``)."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    if isinstance(value, float | np.floating) and not np.isfinite(value):
        return None
    return value


def _have(bases, present) -> tuple[str, ...]:
    return tuple(b for b in bases if b in present)


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON: {value!r}")


if __name__ == "__main__":
    raise SystemExit(main())
