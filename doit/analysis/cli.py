"""``python -m doit.analysis`` (= ``doit analysis``): scaling fits, features, predictions,
figures and a report from a study folder or a results table.

    python -m doit.analysis run STUDY_DIR_OR_TABLE --out DIR      everything below
    python -m doit.analysis select TABLE --out DIR [--rule study|study-per-ability|best-valid|last]
    python -m doit.analysis fit TABLE --out DIR [--replicates 1000] [--delta 2]
    python -m doit.analysis features TABLE --out DIR [--base MODEL --data DOIT_DIR]
    python -m doit.analysis predict TABLE --out DIR
    python -m doit.analysis plot TABLE --out DIR
    python -m doit.analysis report TABLE --out DIR

Outputs and definitions: doit/analysis/README.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from doit.analysis.formulation import MAX, RULES
from doit.analysis.select import RULES as SELECT_RULES
from doit.analysis.sensitivity import DELTA
from doit.data.abilities import FORMULATIONS
from doit.grid.results import ResultsError

STEPS = ("run", "select", "fit", "features", "predict", "plot", "report")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="doit analysis", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    for step in STEPS:
        s = sub.add_parser(step, help=f"{step} (see doit/analysis/README.md)")
        s.add_argument("source", help="a study folder (results/, items/) or a .csv/.parquet table")
        s.add_argument("--out", required=True, type=Path, help="output folder")
        s.add_argument("--rule", default="study", choices=SELECT_RULES, help="checkpoint selection")
        s.add_argument("--replicates", type=int, default=1000, help="bootstrap replicates")
        s.add_argument("--delta", type=float, default=DELTA, help="equivalence margin, points")
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--features", help="a CSV of extra per-ability feature columns")
        s.add_argument("--base", help="untuned base model for Complexity (the smallest base)")
        s.add_argument("--data", help="DoIT data folder for Complexity (and ground_truth.json)")
        s.add_argument("--adapter", default=None, help=argparse.SUPPRESS)
        s.add_argument("--chat-format", default="doit", help="chat format for an untuned base")
        s.add_argument("--formulation", default=MAX, choices=RULES,
                       help="which scoring of a checkpoint scored in several formulations is read: "
                       "max (OLMES's rule, the default) or one formulation's")  # fmt: skip
        s.add_argument("--cell-formulation", choices=FORMULATIONS,
                       help="the cells trained in this formulation (needed when the table holds "
                       "several: a grid's formulation axis)")  # fmt: skip
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return run(args)
    except (ResultsError, ValueError) as e:
        print(f"doit analysis: {e}", file=sys.stderr)
        return 2


def run(args) -> int:
    from doit.analysis import plots, report
    from doit.analysis.pipeline import Analysis, load_truth

    a = Analysis(str(args.source), args.rule, args.replicates, args.delta, args.seed,
                 features_csv=args.features, ground_truth=load_truth(args.data),
                 formulation=args.formulation, cell_formulation=args.cell_formulation)  # fmt: skip
    a.table  # noqa: B018 -- validate before anything is written
    if args.base:
        trained = sorted(a.analysed_rows["cell_formulation"].dropna().unique())
        a.complexity = measure_complexity(args.base, args.data, args.chat_format,
                                          trained[0] if len(trained) == 1 else "letter")  # fmt: skip
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    step, written = args.step, []

    def save(name, df):
        df.to_csv(out / name, index=False)
        written.append(out / name)

    if step in ("run", "select"):
        save("selected.csv", a.selected)
        if not a.formulations.empty:
            save("formulations.csv", a.formulations)
    if step in ("run", "fit"):
        save("fits.csv", a.fits)
        save("sensitivity.csv", a.sensitivity)
    if step in ("run", "features"):
        save("features.csv", a.features)
        if not a.explain.empty:
            save("explain.csv", a.explain)
    if step in ("run", "predict"):
        save("predictions.csv", a.predictions)
    figures = {}
    if step in ("run", "plot", "report"):
        figures = plots.save_all(a, out)
        written += list(figures.values())
    if step in ("run", "report"):
        written += list(report.write(a, out, figures))
    for path in written:
        print(path)
    if step in ("run", "fit", "predict", "plot", "report"):
        for line in a.limits:
            print(f"note: {line}")
    if step in ("run", "report"):
        print(f"report: {out / 'report.html'}")
    return 0


def measure_complexity(base: str, data: str | None, chat_format: str, formulation: str = "letter"):
    """Complexity on the test items as the analysed cells were asked them (``formulation``)."""
    if not data:
        raise ValueError("--base needs --data DOIT_DIR (the items to rank)")
    from doit.analysis.features import complexity
    from doit.data import abilities as ab
    from doit.data.load import load_items
    from doit.models import load_for_inference

    model, tokenizer = load_for_inference(base, chat_format=chat_format)
    items = [ab.formulate(it, formulation) for it in load_items(data, "test")
             if it["ability"] in ab.ABILITY_KEYS]  # fmt: skip
    return complexity(model, tokenizer, items)


if __name__ == "__main__":
    sys.exit(main())
