"""``python -m doit.grid`` (and ``doit grid``): plan, run and watch a scaling study.

python -m doit.grid plan recipes/grids/micro.yaml --out runs/study/micro [--set KEY=VALUE]
python -m doit.grid run runs/study/micro [--backend local|slurm] [--max-parallel K] [--threads T]
python -m doit.grid status runs/study/micro
python -m doit.grid table runs/study/micro
"""

from __future__ import annotations

import sys
from pathlib import Path

from doit.flags import ArgumentParser
from doit.grid.cell import CellError
from doit.grid.plan import Cell, PlanError
from doit.grid.pretraining import PretrainingError
from doit.grid.results import ResultsError
from doit.grid.runner import BACKENDS
from doit.grid.spec import GridError
from doit.io import OutputError


def cmd_plan(a) -> int:
    from doit.grid.plan import write_plan, write_unchecked_plan
    from doit.grid.power import describe, plan_power, unplannable
    from doit.grid.spec import load_grid, parse_sets

    grid = load_grid(a.grid, parse_sets(a.set))
    power = skipped = None
    if not grid.pretraining_only:
        skipped = unplannable(grid)
        if skipped and a.no_check:
            raise PlanError(skipped)
        power = None if skipped else plan_power(grid, a, checked=not a.no_check)
    if a.no_check:
        if power is None:
            raise PlanError(f"{a.grid}: --no-check plans power, and a pretraining grid has none")
        write_unchecked_plan(grid, a.out, power)
        print(describe(power))
        print(f"{a.out}: power planned without bases or corpus (--no-check): no cells to run")
        return 0
    cells, retired = write_plan(grid, a.out, a.replan, power=power)
    print(cell_table(cells))
    for warning in plan_warnings(grid, cells):
        print(f"warning: {warning}")
    if not grid.pretraining_only:
        budgets = ", ".join(f"{k} {v}" for k, v in grid.max_new_tokens.items())
        epochs = grid.eval_epochs if isinstance(grid.eval_epochs, str) else list(grid.eval_epochs)
        print(f"generation budgets (max_new_tokens): {budgets}; scored epochs: {epochs}")
    if power:
        print(describe(power))
    elif skipped:
        print(f"power not planned: {skipped}")
    print(
        f"{a.out}: {len(cells)} cells planned"
        + (f"; {len(retired)} retired (results in {a.out}/retired)" if retired else "")
    )
    return 0


def plan_warnings(grid, cells: list[Cell]) -> list[str]:
    """What a plan holds that is legitimate but likely not what was meant."""
    import fnmatch

    scored = [c for c in cells if c.kind != "pretrain"]
    out = []
    if scored and all(c.kind == "base" for c in scored):
        out.append("only untuned (n = 0) cells: no cell fine-tunes (data.per_ability empty?)")
    for i, b in enumerate(grid.benchmarks):
        if not any(fnmatch.fnmatch(c.id, b.cells) for c in scored):
            out.append(f"benchmarks[{i}].cells {b.cells!r} matches no scored cell")
    return out


def cell_table(cells: list[Cell]) -> str:
    """One line a cell: id, kind, training items, optimiser steps, estimated minutes."""
    lines = [f"{'cell':<48} {'kind':<8} {'items':>6} {'steps':>6} {'est. min':>8}"]
    for c in cells:
        est = c.est_s
        lines.append(
            f"{c.id:<48} {c.kind:<8} {_n(c.n_total):>6} "
            f"{_n(c.est_steps):>6} {'?' if est is None else f'{est / 60:.1f}':>8}"
        )
    known = [c.est_s for c in cells if c.est_s is not None]
    if any(c.kind != "pretrain" for c in cells):  # pretraining has no estimate
        lines.append(
            f"estimated training time of the cells with an estimate: "
            f"{sum(known) / 60:.0f} min (scoring comes on top; bases' s_per_step sets "
            "the estimate)"
        )
    return "\n".join(lines)


def _n(value) -> str:
    return "-" if value is None else str(value)


def cmd_run(a) -> int:
    import fnmatch

    from doit.grid.plan import read_plan, unchecked
    from doit.grid.runner import run_study

    if unchecked(a.study):
        raise PlanError(f"{a.study}: planned with --no-check (no cells); plan it without to run")

    if a.cells and not any(fnmatch.fnmatch(c.id, a.cells) for c in read_plan(a.study).cells):
        print(f"warning: --cells {a.cells!r} matches no cell of {a.study}")

    ended = run_study(a.study, a.backend, a.max_parallel, a.threads, a.cells, a.retry_failed)
    failed = sorted(c for c, s in ended.items() if s == "failed")
    tables = ", ".join(
        str(a.study / t) for t in ("results.csv", "pretraining.csv") if (a.study / t).is_file()
    )
    print(f"{a.study}: {len(ended)} cells run, {len(failed)} failed; tables: {tables}")
    if failed:
        print(f"failed: {', '.join(failed)} (python -m doit.grid status {a.study})")
    return 1 if failed else 0


def cmd_status(a) -> int:
    from doit.grid.status import print_status

    return print_status(a.study)


def cmd_table(a) -> int:
    from doit.grid.table import print_table

    return print_table(a.study, a.split)


def cmd_run_cell(a) -> int:
    from doit.grid.runner import exit_status, work_cell

    return exit_status(work_cell(a.study, a.cell, a.threads, retry_failed=a.retry_failed))


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="python -m doit.grid", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("plan", help="expand a grid into cells in a study folder")
    s.add_argument("grid", type=Path, help="a grid file (recipes/grids/*.yaml)")
    s.add_argument("--out", type=Path, required=True, help="the study folder")
    s.add_argument(
        "--replan",
        action="store_true",
        help="accept a changed grid: unchanged cells keep their work",
    )
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a top-level grid key over the file's (VALUE in YAML; repeatable), "
        "e.g. --set 'pretrain_seed=[0,1,2]'",
    )
    power_flags(s)
    s.set_defaults(func=cmd_plan)
    s = sub.add_parser("run", help="run every pending cell, then write results.csv")
    s.add_argument("study", type=Path)
    s.add_argument("--backend", choices=BACKENDS, default=BACKENDS[0])
    s.add_argument(
        "--max-parallel",
        type=int,
        default=1,
        help="cells at once (local: worker processes; slurm: array concurrency)",
    )
    s.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads per cell (default: torch's; see README for 2 x 1 vs 1 x 2)",
    )
    s.add_argument("--cells", default=None, help="only cells whose id matches this glob")
    s.add_argument("--retry-failed", action="store_true", help="run failed cells again")
    s.set_defaults(func=cmd_run)
    s = sub.add_parser("status", help="cells pending / running / done / failed")
    s.add_argument("study", type=Path)
    s.set_defaults(func=cmd_status)
    s = sub.add_parser("table", help="per-ability scores by base and n (last epoch)")
    s.add_argument("study", type=Path)
    s.add_argument("--split", default="test", help="valid or test (default test)")
    s.set_defaults(func=cmd_table)
    s = sub.add_parser("run-cell", help="(worker) run one cell of a planned study")
    s.add_argument("study", type=Path)
    s.add_argument("cell")
    s.add_argument("--threads", type=int, default=None)
    s.add_argument("--retry-failed", action="store_true", help="run it again if it failed")
    s.set_defaults(func=cmd_run_cell)
    return p


def power_flags(s) -> None:
    """The plan's power flags (doit/grid/power.py's docstring)."""
    from doit.stats.power import DELTA
    from doit.stats.variance import SCORE_PRIOR, SEED_SD_PRIOR

    s.add_argument(
        "--no-check",
        action="store_true",
        help="plan power only, without the bases or the corpus (counts from the grid and the "
        "dataset card); writes no cells",
    )
    s.add_argument("--pilot", type=Path, help="a finished study with per-item rows: its inputs")
    s.add_argument(
        "--seed-sd",
        type=float,
        help=f"training-seed SD prior, logit of a cell's score (default {SEED_SD_PRIOR}, micro)",
    )
    s.add_argument(
        "--score-levels",
        help=f"expected score, points: one value or ability=p,... (default {SCORE_PRIOR:g})",
    )
    s.add_argument("--item-corr", type=float, help="two cells' item correlation (default 0)")
    s.add_argument("--design-effect", type=float, default=1.0, help="item clusters (default 1)")
    s.add_argument("--items", type=int, help="test items per ability (default: corpus or card)")
    s.add_argument("--budget", type=int, help="the policy difference's budget (default: largest)")
    s.add_argument("--delta", type=float, default=DELTA, help=f"margin, points (default {DELTA})")


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        return a.func(a)
    except (GridError, PlanError, ResultsError, PretrainingError, CellError, OutputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
