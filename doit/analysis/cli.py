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
    python -m doit.analysis curriculum STUDY --budget N --policy P[,P|all] --out DIR [--validate]
    python -m doit.analysis design --mde data=4,size=5 --candidates FILE.yaml --max-cost C --out DIR

Outputs and definitions: doit/analysis/README.md (``ladder``: doit/analysis/ladder.py).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from doit.analysis.settings import add_flags, from_args
from doit.data.kinds import LETTER
from doit.data.layout import TRAIN_POOLS
from doit.flags import ArgumentParser, at_least
from doit.grid.results import ResultsError
from doit.io import OutputKind, check_output, mark_output, marked_or_holding

STEPS = ("run", "select", "fit", "features", "predict", "plot", "report")
# An analysis folder: its manifest.json (or, written before it had one, what `run` always writes)
ANALYSIS = OutputKind(
    "analysis", holds=marked_or_holding("analysis", "selected.csv", "fits.csv", "report.html")
)
OVERWRITE_HELP = "write into an existing --out that is not this command's output folder"


def check_out(args, kind: OutputKind, inputs: dict) -> None:
    """``--out`` under doit's one output rule, before any table is read or fitted."""
    check_output(args.out, kind, inputs=inputs, overwrite=args.overwrite)


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="doit analysis", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    for step in STEPS:
        s = sub.add_parser(step, help=f"{step} (see doit/analysis/README.md)")
        s.add_argument("source", help="a study folder (results/, items/) or a .csv/.parquet table")
        s.add_argument("--out", required=True, type=Path, help="output folder")
        s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
        add_flags(s)
        s.add_argument("--features", help="a CSV of extra per-ability feature columns")
        s.add_argument("--base", help="untuned base model for Complexity (the smallest base)")
        s.add_argument("--data", help="DoIT data folder for Complexity (and ground_truth.json)")
        s.add_argument("--chat-format", default="doit", help="chat format for an untuned base")
        s.add_argument(
            "--budget",
            type=int,
            help="run/report: add a curriculum section at this "
            "budget (items; see the curriculum command)",
        )
    s = sub.add_parser("ladder", help="loss vs size of a pretraining ladder (ladder.py)")
    s.add_argument(
        "sources",
        nargs="+",
        help="ladder folders (<arch>_<size>/seed<k>/metrics.jsonl) or CSV tables of runs",
    )
    s.add_argument("--out", required=True, type=Path, help="output folder")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.add_argument(
        "--base-arch", default="vanilla", help="the architecture the others are paired with"
    )
    s.add_argument("--replicates", type=at_least(1), default=2000, help="seed bootstrap replicates")
    s.add_argument("--seed", type=int, default=0)
    curriculum_parser(sub)
    from doit.analysis.design import design_parser

    design_parser(sub)
    return p


def curriculum_parser(sub) -> None:
    from doit.analysis.curriculum.options import (
        EXTRAPOLATE_BELOW,
        FURTHER,
        MODELS,
        REACH,
        REPLAY_SHARE,
        RISK,
        SETTINGS,
        SPECIALISTS,
        TRANSFER,
        UNITS,
        WHY,
    )
    from doit.analysis.curriculum.policies import help_text

    s = sub.add_parser(
        "curriculum",
        help="a data mix per ability from the fitted curves (doit/analysis/README.md, Curriculum)",
    )
    s.add_argument("source", help="a study folder (results/, items/) or a .csv/.parquet table")
    s.add_argument(
        "--budget", type=at_least(1), required=True, help="items (or tokens) to allocate"
    )
    s.add_argument(
        "--policy",
        default="marginal",
        help=help_text(),
    )
    s.add_argument("--out", required=True, type=Path, help="output folder")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.add_argument("--base", help="the target base (default: the study's largest)")
    s.add_argument(
        "--fit-base",
        help="choose on this base's curves, train on --base; --validate trains on both and "
        "says whether each policy's gain held (decision.csv)",
    )
    s.add_argument("--params", type=float, help="a target outside the study: its parameters")
    s.add_argument(
        "--data",
        help="the corpus the mix draws from (its pools); default: the study's grid's doit_dir",
    )
    s.add_argument(
        "--pool",
        "--source",
        dest="pool",
        default="1000",
        choices=TRAIN_POOLS,
        help="the train pool the mix draws from (the mix's `source`; as sft's --pool); "
        "--source is its old spelling, deprecated",
    )
    for flag, what in (
        ("--pools", "pool sizes, instead of --data"),
        ("--floors", "fewest items (default 1)"),
        ("--caps", "most items"),
        ("--weights", "macro weights (default 1)"),
    ):
        s.add_argument(flag, help=f"ability=number,...: {what}")
    s.add_argument("--unit", default="items", choices=UNITS, help="what the budget counts")
    s.add_argument(
        "--transfer",
        default="auto",
        choices=TRANSFER,
        help="the transfer term from leave-one-out cells: auto (if any), on, off",
    )
    s.add_argument("--model", default="auto", choices=MODELS, help="regression's model")
    s.add_argument(
        "--reach",
        type=at_least(0, float),
        default=None,
        help=f"optimised counts stay within this x the largest observed n (default: "
        f"evidence-bounded: {REACH:g}, {FURTHER:g} where the held-out one-step error is "
        f"< {EXTRAPOLATE_BELOW:g} points)",
    )
    s.add_argument(
        "--transfer-from",
        help="the base whose leave-one-out cells measure the transfer term when the target "
        "has none (refused otherwise), noted",
    )
    s.add_argument(
        "--risk",
        type=at_least(0, float),
        default=RISK,
        help=f"lambda of marginal's objective sum_a w_a (S_a - lambda SD_a) (default {RISK:g}, "
        "chosen on the planted check; 0: the plug-in optimum)",
    )
    s.add_argument(
        "--specialist",
        default=",".join(SPECIALISTS),
        help="dmt: the abilities its first stage trains (default "
        f"{','.join(SPECIALISTS)}: DMT's specialists)",
    )
    s.add_argument(
        "--replay",
        type=at_least(0),
        help="dmt, staged: items of the first stage replayed in the second (default "
        f"{REPLAY_SHARE:.4g} of them)",
    )
    s.add_argument(
        "--no-loss",
        action="store_true",
        help="no ability predicted below uniform by more than its MDE",
    )
    s.add_argument(
        "--plug-in",
        action="store_true",
        help="predicted gains from the fits of every item, not cross-fitted on two halves",
    )
    add_flags(s, SETTINGS, WHY)
    s.add_argument(
        "--validate",
        action="store_true",
        help="train the equal-budget policies on the target and compare with uniform",
    )
    s.add_argument(
        "--seeds",
        default="0,1",
        help="--validate: training seeds (two or more also resample seeds; one: CIs "
        "over items only)",
    )
    s.add_argument("--max-parallel", type=int, default=1, help="--validate: grid workers")
    s.add_argument("--threads", type=int, help="--validate: CPU threads per worker")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from doit.analysis.design import run_design

    steps = {"ladder": ladder, "curriculum": curriculum, "design": run_design}
    try:
        return steps.get(args.step, run)(args)
    except (ResultsError, ValueError, FileNotFoundError) as e:
        print(f"doit analysis: {e}", file=sys.stderr)
        return 2


def run(args) -> int:
    from doit.analysis import plots, report
    from doit.analysis.pipeline import Analysis, load_truth

    named = {"the source": args.source, "--features": args.features, "--base": args.base}
    check_out(args, ANALYSIS, {**named, "--data": args.data})
    settings = from_args(args)
    a = Analysis(
        str(args.source),
        settings,
        features_csv=args.features,
        ground_truth=load_truth(args.data),
    )
    a.extra_features  # noqa: B018 (read and checked before anything is written)
    if a.table.empty:  # validated first: nothing is written for a table that is refused
        return write_empty(a, args.out, args.step)
    planned = curriculum_for(args) if args.budget and args.step in ("run", "report") else None
    if args.base:  # measured as the analysed cells were asked (their formulation)
        trained = sorted(a.table["cell_formulation"].dropna().unique())
        measured = measure_complexity(
            args.base,
            args.data,
            args.chat_format,
            trained[0] if len(trained) == 1 else LETTER,
            complexity_split(settings.split),
        )
        a = replace(a, complexity=measured, study=a.rows)  # the rows already read
    out, step = args.out, args.step
    written = write_tables(a, out, step)
    figures = {}
    if step in ("run", "plot", "report"):
        figures = plots.save_all(a, out)
        written += list(figures.values())
    if step in ("run", "report"):
        section = []
        if planned is not None:
            from doit.analysis.curriculum import outputs

            png = outputs.save_figure(planned, out)
            section, written = outputs.blocks(planned, png), written + [png]
        written += list(report.write(a, out, figures, section))
    for path in written:
        print(path)
    if step in ("run", "fit", "predict", "plot", "report"):
        for line in a.limits:
            print(f"note: {line}")
    if step in ("run", "report"):
        print(f"report: {out / 'report.html'}")
    return 0


def write_tables(a, out: Path, step: str = "run") -> list[Path]:
    """The CSV outputs of ``step`` (run: all of them), each written atomically; returns them."""
    from doit.io import atomic_path

    mark_output(out, ANALYSIS.name)
    wanted = {
        "select": [
            ("selected.csv", lambda: a.selected),
            ("formulations.csv", lambda: a.formulations),
        ],
        "fit": [("fits.csv", lambda: a.fits), ("sensitivity.csv", lambda: a.sensitivity)],
        "features": [("features.csv", lambda: a.features), ("explain.csv", lambda: a.explain)],
        "predict": [("predictions.csv", lambda: a.predictions)],
    }
    written = []
    for name, table in (x for k, pairs in wanted.items() if step in ("run", k) for x in pairs):
        df = table()
        if df.empty and name in ("formulations.csv", "explain.csv"):  # written only when held
            continue
        with atomic_path(out / name) as tmp:
            df.to_csv(tmp, index=False)
        written.append(out / name)
    return written


def curriculum(args) -> int:
    from doit.analysis import curriculum as cur
    from doit.analysis.curriculum import policies as pol
    from doit.analysis.curriculum.options import Options, parse_pairs
    from doit.analysis.curriculum.outputs import CURRICULUM

    check_out(args, CURRICULUM, {"the source": args.source, "--data": args.data})
    if args.validate and args.split == "test":
        print(
            "warning: --split test with --validate: the mix is chosen on test and judged on "
            "test (the comparison is then optimistic); choose on valid (the default)"
        )
    policies = (
        pol.names() if args.policy == "all" else tuple(p.strip() for p in args.policy.split(","))
    )
    options = Options(
        budget=args.budget,
        policies=policies,
        base=args.base,
        fit_base=args.fit_base,
        params=args.params,
        pools=parse_pairs(args.pools, "--pools") if args.pools else None,
        data=args.data,
        pool=args.pool,
        floors=parse_pairs(args.floors, "--floors"),
        caps=parse_pairs(args.caps, "--caps"),
        weights=parse_pairs(args.weights, "--weights", float),
        unit=args.unit,
        transfer=args.transfer,
        model=args.model,
        reach=args.reach,
        risk=args.risk,
        no_loss=args.no_loss,
        transfer_from=args.transfer_from,
        crossfit=not args.plug_in,
        specialist=specialists(args.specialist),
        replay=args.replay,
        settings=from_args(args),
    )
    result = cur.make(args.source, options)
    seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
    if args.validate:
        from doit.analysis.curriculum import validate

        validate.validation_grid(result, args.out, seeds)  # its errors before anything is written
    written = cur.write(result, args.out)
    for path in written:
        print(path)
    from doit.analysis.curriculum.core import MACRO, MACRO_VIEW

    macro = result.table[result.table["ability"] == MACRO][MACRO_VIEW]
    print(macro.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    for line in result.notes:
        print(f"note: {line}")
    if args.validate:
        tables = validate.run(result, args.out, seeds, args.max_parallel, args.threads)
        for path in cur.outputs.write_report(result, args.out, validate.blocks(tables)):
            print(path)
        diff = tables["differences"]
        print(
            diff[diff["ability"].isin(["macro", "overall"])].to_string(
                index=False, float_format=lambda x: f"{x:.2f}"
            )
        )
    return 0


def specialists(text: str) -> tuple[str, ...]:
    """``--specialist a,b``: ability keys; a CurriculumError names an unknown one."""
    from doit.analysis.curriculum.options import CurriculumError
    from doit.data import abilities as ab

    try:
        return tuple(ab.parse_keys([k.strip() for k in text.split(",") if k.strip()]))
    except ValueError as e:
        raise CurriculumError(f"--specialist {text!r}: {e}") from None


def curriculum_for(args):
    """The curriculum of ``run --budget N``'s report section: every policy the study's cells
    allow (each policy's `Policy.needs`) but the staged ones (their predictions are another
    policy's), pools from --data or the study's grid; the run's settings but the curriculum's
    rule and split (valid under `last`)."""
    from doit.analysis import curriculum as cur
    from doit.analysis.curriculum.options import SETTINGS, Options
    from doit.analysis.curriculum.policies import allowed
    from doit.analysis.pipeline import Analysis

    settings = replace(from_args(args), rule=SETTINGS.rule, split=SETTINGS.split)
    analysis = Analysis(str(args.source), settings)
    policies = allowed(analysis.table["construction"], staged=False)
    options = Options(budget=args.budget, policies=policies, data=args.data, settings=settings)
    return cur.make(analysis, options)


EMPTY_NOTE = "The results table has no rows: nothing to select, fit or predict."


def write_empty(a, out: Path, step: str) -> int:
    """The outputs of a table without rows: each CSV with its columns and no rows, a report
    that says so (as a study too small for a piece gets that piece empty, with a note)."""
    import pandas as pd

    from doit.analysis import fits, report, sensitivity

    columns = {
        "selected.csv": list(a.table.columns),
        "fits.csv": fits.COLUMNS,
        "sensitivity.csv": sensitivity.COLUMNS,
    }
    wanted = {
        "run": list(columns),
        "select": ["selected.csv"],
        "fit": ["fits.csv", "sensitivity.csv"],
    }.get(step, [])
    mark_output(out, ANALYSIS.name)
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

    check_out(args, lad.LADDER, {f"the source {s}": s for s in args.sources})
    result = lad.analyse(lad.load_runs(args.sources), args.base_arch, args.replicates, args.seed)
    written = lad.write(result, args.out)
    print(result.table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"\n{result.text}\n")
    for path in written:
        print(path)
    return 0


def complexity_split(fitted: str) -> str:
    """The split Complexity is measured on: valid, disjoint from the test items the
    sensitivities it explains are measured on (test when they are fitted on valid)."""
    return "test" if fitted == "valid" else "valid"


def measure_complexity(
    base: str,
    data: str | None,
    chat_format: str,
    formulation: str = LETTER,
    split: str = "valid",
):
    """Complexity on the ``split`` items (`complexity_split`) as the analysed cells were asked
    them (``formulation``); its ``complexity_split`` column names the split."""
    if not data:
        raise ValueError("--base needs --data DOIT_DIR (the items to rank)")
    from doit.analysis.features import complexity
    from doit.data import abilities as ab
    from doit.data import kinds as ak
    from doit.data.load import load_items
    from doit.models import load_for_inference

    model, tokenizer = load_for_inference(base, chat_format=chat_format)
    items = [
        ak.formulate(it, formulation)
        for it in load_items(data, split)
        if it["ability"] in ab.ABILITY_KEYS
    ]
    return complexity(model, tokenizer, items).assign(complexity_split=split)


if __name__ == "__main__":
    sys.exit(main())
