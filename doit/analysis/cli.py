"""``python -m doit.analysis`` (= ``doit analysis``): scaling fits, features, predictions,
figures and a report from a study folder or a results table.

    python -m doit.analysis run STUDY_DIR_OR_TABLE --out DIR      everything below
    python -m doit.analysis select TABLE --out DIR [--rule study|study-per-ability|best-valid|last]
    python -m doit.analysis fit TABLE --out DIR [--replicates 1000] [--delta 2]
    python -m doit.analysis features TABLE --out DIR [--base MODEL --data DOIT_DIR]
    python -m doit.analysis predict TABLE --out DIR
    python -m doit.analysis plot TABLE --out DIR
    python -m doit.analysis report TABLE --out DIR
    python -m doit.analysis ladder RUNS_OR_TABLE... --out DIR [--base-arch vanilla] [--replicates 2000]

Outputs and definitions: doit/analysis/README.md (``ladder``: doit/analysis/ladder.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from doit.analysis.select import RULES
from doit.analysis.sensitivity import DELTA
from doit.flags import ArgumentParser
from doit.grid.results import ResultsError

STEPS = ("run", "select", "fit", "features", "predict", "plot", "report")


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="doit analysis", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    for step in STEPS:
        s = sub.add_parser(step, help=f"{step} (see doit/analysis/README.md)")
        s.add_argument("source", help="a study folder (results/, items/) or a .csv/.parquet table")
        s.add_argument("--out", required=True, type=Path, help="output folder")
        s.add_argument("--rule", default="study", choices=RULES, help="checkpoint selection")
        s.add_argument("--replicates", type=int, default=1000, help="bootstrap replicates")
        s.add_argument("--delta", type=float, default=DELTA, help="equivalence margin, points")
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--features", help="a CSV of extra per-ability feature columns")
        s.add_argument("--base", help="untuned base model for Complexity (the smallest base)")
        s.add_argument("--data", help="DoIT data folder for Complexity (and ground_truth.json)")
        s.add_argument("--chat-format", default="doit", help="chat format for an untuned base")
    s = sub.add_parser("ladder", help="loss vs size of a pretraining ladder (ladder.py)")
    s.add_argument("sources", nargs="+",
                   help="ladder folders (<arch>_<size>/seed<k>/metrics.jsonl) or CSV tables of runs")  # fmt: skip
    s.add_argument("--out", required=True, type=Path, help="output folder")
    s.add_argument("--base-arch", default="vanilla",
                   help="the architecture the others are paired with")  # fmt: skip
    s.add_argument("--replicates", type=int, default=2000, help="seed bootstrap replicates")
    s.add_argument("--seed", type=int, default=0)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return ladder(args) if args.step == "ladder" else run(args)
    except (ResultsError, ValueError, FileNotFoundError) as e:
        print(f"doit analysis: {e}", file=sys.stderr)
        return 2


def run(args) -> int:
    from doit.analysis import plots, report
    from doit.analysis.pipeline import Analysis, load_truth

    a = Analysis(str(args.source), args.rule, args.replicates, args.delta, args.seed,
                 features_csv=args.features, ground_truth=load_truth(args.data))  # fmt: skip
    if a.table.empty:  # validated first: nothing is written for a table that is refused
        return write_empty(a, args.out, args.step)
    if args.base:
        a.complexity = measure_complexity(args.base, args.data, args.chat_format)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    step, written = args.step, []

    def save(name, df):
        df.to_csv(out / name, index=False)
        written.append(out / name)

    if step in ("run", "select"):
        save("selected.csv", a.selected)
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


EMPTY_NOTE = "The results table has no rows: nothing to select, fit or predict."


def write_empty(a, out: Path, step: str) -> int:
    """The outputs of a table without rows: each CSV with its columns and no rows, a report
    that says so (as a study too small for a piece gets that piece empty, with a note)."""
    import pandas as pd

    from doit.analysis import fits, report, sensitivity

    columns = {"selected.csv": list(a.table.columns), "fits.csv": fits.COLUMNS,
               "sensitivity.csv": sensitivity.COLUMNS}  # fmt: skip
    wanted = {"run": list(columns), "select": ["selected.csv"],
              "fit": ["fits.csv", "sensitivity.csv"]}.get(step, [])  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in wanted:
        pd.DataFrame(columns=columns[name]).to_csv(out / name, index=False)
        written.append(out / name)
    if step in ("run", "report"):
        written += report.write_blocks([("h1", "Scaling analysis"), ("p", EMPTY_NOTE)], out)
    for path in written:
        print(path)
    print(f"note: {EMPTY_NOTE}")
    return 0


def ladder(args) -> int:
    from doit.analysis import ladder as lad

    result = lad.analyse(lad.load_runs(args.sources), args.base_arch, args.replicates, args.seed)
    written = lad.write(result, args.out)
    print(result.table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"\n{result.text}\n")
    for path in written:
        print(path)
    return 0


def measure_complexity(base: str, data: str | None, chat_format: str):
    if not data:
        raise ValueError("--base needs --data DOIT_DIR (the items to rank)")
    from doit.analysis.features import complexity
    from doit.data import abilities as ab
    from doit.data.load import load_items
    from doit.models import load_for_inference

    model, tokenizer = load_for_inference(base, chat_format=chat_format)
    items = [it for it in load_items(data, "test") if it["ability"] in ab.ABILITY_KEYS]
    return complexity(model, tokenizer, items)


if __name__ == "__main__":
    sys.exit(main())
