"""The whole study at micro scale, on a laptop CPU: what `make demo` runs.

```bash
python recipes/demo.py                     # corpus, bases, cells, analysis, curriculum, summary
python recipes/demo.py --study runs/study/demo --data data/generated/micro --workers 2
```

Five timed steps, each printed beside its budget (a first run's, on 2 cores; a rerun reuses
every finished piece and takes well under a minute):

1. corpus: the synthetic micro DoIT (`doit.data.micro.write_corpus`), or the one built;
2. bases: the grid's pretraining cells (`recipes/grids/demo.yaml`), or the bases built;
3. cells: the grid's fine-tuned and untuned cells, scored on valid and test with the OOD sets;
4. analysis: fits, sensitivities and groups with their MDE, held-out predictions, Complexity
   (on the smaller base) and Transference, the agreement with the corpus's planted properties;
5. curriculum: `marginal` against `uniform` at 640 items on the larger base, fitted on valid,
   the marginal mix trained and both scored on test (uniform is the grid's n = 64 cell: the
   same draw); then the report (``STUDY/analysis/report.html``) and a summary of <= 10 lines,
   also kept in ``STUDY/analysis/summary.txt``.

One training seed per cell: every interval of steps 4 and 5 takes its seed component as a prior,
the seed SD studies/seed_noise_micro measured on this recipe (`seed_prior`).

What the library prints beyond the step lines goes to ``STUDY/demo.log``; the runner's
progress bars stay on the terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import sys
import time
from pathlib import Path

BUDGETS = {"corpus": 30, "bases": 300, "cells": 420, "analysis": 60, "curriculum": 90}  # s: 15 min
CURRICULUM_BUDGET = 640  # items: 64 per ability, so uniform is the grid's n = 64 cell
SEEDS = (0,)  # one training seed: the seed component of every interval is a prior (below)
# The grid's leave-one-out cells are on vanilla_xs, the curriculum's target is vanilla_s: their
# transfer term is not carried across bases (#32), so the demo's curriculum turns it off.
TRANSFER = "off"
REPO = Path(__file__).resolve().parents[1]  # the recorded reference study lies under it


class Clock:
    """Times each step and prints it beside its budget."""

    def __init__(self, budgets: dict[str, int]):
        self.budgets, self.started = budgets, time.perf_counter()

    @contextlib.contextmanager
    def step(self, name: str):
        i, k = list(self.budgets).index(name) + 1, len(self.budgets)
        print(f"[{i}/{k}] {name} ...", flush=True)
        started = time.perf_counter()
        yield
        spent, budget = time.perf_counter() - started, self.budgets[name]
        over = "  OVER BUDGET" if spent > budget else ""
        print(f"[{i}/{k}] {name}: {spent:.0f} s (budget {budget} s){over}", flush=True)

    @property
    def total(self) -> float:
        return time.perf_counter() - self.started


@contextlib.contextmanager
def logged(path: Path):
    """What the library prints goes to ``path`` (progress bars stay on stderr)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh, contextlib.redirect_stdout(fh):
        yield


def parse_args(argv=None):
    from doit.analysis.bootstrap import REPLICATES
    from doit.flags import at_least

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=Path("data/generated/micro"))
    p.add_argument("--grid", type=Path, default=Path("recipes/grids/demo.yaml"))
    p.add_argument("--study", type=Path, default=Path("runs/study/demo"))
    p.add_argument("--workers", type=at_least(1), default=2, help="cells at once (one thread each)")
    p.add_argument("--budget", type=at_least(1), default=CURRICULUM_BUDGET, help="curriculum items")
    p.add_argument(
        "--replicates",
        type=at_least(1),
        default=REPLICATES,
        help="bootstrap replicates of the analysis and of the curriculum's fits",
    )
    return p.parse_args(argv)


def main(argv=None) -> int:
    """Exit 0 when the demo finished, 1 when a cell failed, 2 on a located input error (one
    line naming what to fix; nothing half-written)."""
    from doit.analysis.curriculum.options import CurriculumError
    from doit.data.schema import DataError
    from doit.grid.plan import PlanError
    from doit.grid.results import ResultsError
    from doit.grid.spec import GridError
    from doit.io import OutputError

    try:
        return demo(parse_args(argv))
    except (CurriculumError, DataError, GridError, OutputError, PlanError, ResultsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def demo_study():
    """The demo's output kind for ``--study``: a study (its plan.json), or one the demo began
    and was stopped in before planning (only its demo.log)."""
    from doit.grid.plan import STUDY
    from doit.io import OutputKind

    def holds(path: Path) -> bool:
        return STUDY.held_by(path) or {p.name for p in path.iterdir()} <= {"demo.log"}

    return OutputKind("study", holds=holds, marker=STUDY.marker)


def check_outputs(a) -> None:
    """``--study`` and ``--data`` under doit's one output rule, before anything is written:
    the study never the corpus or the grid (nor a folder holding them, nor the current
    directory), an existing one only a study; the corpus, unless built, the same. The demo
    has no overwrite: its errors name its own flags and ask for another folder."""
    from doit.data.micro.corpus import MICRO
    from doit.io import check_output

    inputs = {"the corpus (--data)": a.data, "the grid (--grid)": a.grid}
    check_output(a.study, demo_study(), inputs=inputs, flag="--study", overwrite_flag=None)
    if not (a.data / "manifest.json").is_file():
        inputs = {"the study (--study)": a.study, "the grid (--grid)": a.grid}
        check_output(a.data, MICRO, inputs=inputs, flag="--data", overwrite_flag=None)


def demo(a) -> int:
    from doit.data.micro.build import N_RECORDED  # the demo scores the recorded 100 per split
    from doit.data.micro.corpus import describe, write_corpus
    from doit.grid.plan import write_plan
    from doit.grid.runner import run_study
    from doit.grid.spec import load_grid

    check_outputs(a)
    clock, log = Clock(BUDGETS), a.study / "demo.log"
    with clock.step("corpus"):
        if not (a.data / "manifest.json").is_file():
            with logged(log):
                write_corpus(a.data, flag="--data", overwrite_flag=None, held_out=N_RECORDED)
        print(f"    {describe(a.data)}")
    grid = load_grid(a.grid, {"doit_dir": str(a.data)})
    with logged(log):
        cells, _ = write_plan(grid, a.study, replan=True, flag="--study", kind=demo_study())
    print(f"    {a.study}: {len(cells)} cells planned from {a.grid}")
    with clock.step("bases"):
        run_study(a.study, "local", a.workers, 1, pattern="pretrain-*")
    with clock.step("cells"):
        ended = run_study(a.study, "local", a.workers, 1)
    failed = sorted(c for c, state in ended.items() if state == "failed")
    if failed:
        print(
            f"error: failed cells: {', '.join(failed)} (their worker.log; "
            f"python -m doit.grid status {a.study})",
            file=sys.stderr,
        )
        return 1
    out = a.study / "analysis"
    prior = seed_prior()
    stamp = fingerprint(a.study)
    seeds = None if prior is None else list(prior)  # as summary.json keeps it
    asked = {"budget": a.budget, "replicates": a.replicates, "seed_prior": seeds}
    lines = reuse_summary(out, stamp, asked)
    if lines is None:
        lines = analyse(a, grid, clock, log, out, prior)
        save_summary(out, stamp, asked, lines)
    else:
        print("    analysis and curriculum: up to date with the study's results (reused)")
        lines[0] += f"; this run {clock.total / 60:.1f} min"
    print("\n".join(lines))
    return 0


def seed_prior():
    """The training-seed draws every interval of the demo includes (`reference.SeedPrior`: the
    seed SD and its correlation across abilities): one seed cannot estimate them, so they are
    what the recorded seed-noise study measured on the demo's recipe
    (`reference.SEED_PRIOR_FILE`); None (intervals over items only, said) without it."""
    from doit.analysis import reference

    return reference.read_seed_prior(REPO / reference.SEED_PRIOR_FILE)


def analyse(a, grid, clock: Clock, log: Path, out: Path, prior) -> list[str]:
    """Steps 4 and 5, the report and the summary lines; ``prior``: the seed draws
    (`seed_prior`)."""
    from doit.analysis import plots, reference, report, summary
    from doit.analysis.curriculum import outputs, validate

    with clock.step("analysis"), logged(log):
        analysis = run_analysis(a.study, a.data, out, grid, a.replicates, prior)
        figures = plots.save_all(analysis, out)
    base = grid.bases[-1].name  # the larger base: the grids list them smallest first
    with clock.step("curriculum"), logged(log):
        result, tables = run_curriculum(
            a.study, a.data, out / "curriculum", base, a.budget, a.workers, a.replicates, prior
        )
        gain = summary.curriculum_gain(tables["differences"])
        png = out / "curriculum" / "figures" / "curriculum.png"  # drawn by curriculum.write
        section = outputs.blocks(result, png) + validate.blocks(tables)
        headline = summary.headline(analysis, gain, a.budget, base, len(SEEDS))
        report.write(analysis, out, figures, section, headline)
    cells = len(analysis.table["cell"].unique())
    said = curriculum_said(result)
    recorded = reference.read_reference(REPO / reference.REFERENCE_DIR)
    graded = summary.reference_lines(analysis, recorded, grid.formulations[0])
    return summary.summary_lines(
        analysis,
        gain,
        clock.total,
        out / "report.html",
        a.budget,
        base,
        len(SEEDS),
        cells,
        said,
        graded,
    )


def curriculum_said(result) -> str:
    """How the demo's marginal was made: its bounds, risk and transfer (the summary line)."""
    o = result.options
    reach = "evidence-bounded" if o.reach is None else f"reach {o.reach:g}"
    return (
        f"default marginal ({reach}, risk {o.risk:g}); transfer {o.transfer}: the grid's "
        "leave-one-out cells are on another base than the target"
    )


def run_analysis(study: Path, data: Path, out: Path, grid, replicates: int, prior=None):
    """The study's analysis on test (the rule `last`, ``prior`` the seed draws), Complexity
    measured on the smaller base as the cells were asked (their formulation) on valid (the split
    disjoint from the sensitivities'), every table written; returns the Analysis."""
    from doit.analysis.cli import complexity_split, measure_complexity, write_tables
    from doit.analysis.pipeline import Analysis, load_truth
    from doit.analysis.settings import Settings

    settings = with_prior(Settings(rule="last", replicates=replicates), prior)
    complexity = measure_complexity(
        str(grid.bases[0].resolved),
        str(data),
        grid.bases[0].chat_format,
        grid.formulations[0],
        complexity_split(settings.split),
    )
    analysis = Analysis(str(study), settings, complexity=complexity, ground_truth=load_truth(data))
    write_tables(analysis, out)
    return analysis


def run_curriculum(
    study: Path,
    data: Path,
    out: Path,
    base: str,
    budget: int,
    workers: int,
    replicates: int,
    prior=None,
):
    """marginal vs uniform at ``budget`` items on ``base``: fitted on valid with ``replicates``
    bootstrap replicates and the seed draws ``prior`` (the analysis's), written, the marginal
    mix trained (uniform reuses the grid's cell), both compared on test."""
    from dataclasses import replace

    from doit.analysis import curriculum as cur
    from doit.analysis.curriculum import validate
    from doit.analysis.curriculum.options import SETTINGS

    settings = with_prior(replace(SETTINGS, replicates=replicates), prior)
    options = cur.Options(
        budget=budget,
        policies=("marginal",),
        base=base,
        data=str(data),
        transfer=TRANSFER,
        settings=settings,
    )
    result = cur.make(str(study), options)
    cur.write(result, out)
    tables = validate.run(result, out, seeds=SEEDS, max_parallel=workers, threads=1)
    cur.outputs.write_report(result, out, validate.blocks(tables))
    return result, tables


def with_prior(settings, prior):
    """``settings`` with the seed prior's SD and correlation (unchanged without one)."""
    from dataclasses import replace

    return settings if prior is None else replace(settings, seed_sd=prior.sd, seed_corr=prior.corr)


def fingerprint(study: Path) -> str:
    """The sha256 of the study's results table and of the recorded reference study's tables
    the summary is graded against: the analysis is current while they are unchanged."""
    from doit.analysis.reference import REFERENCE_DIR, REFERENCE_FILES

    digest = hashlib.sha256((study / "results.csv").read_bytes())
    for name in REFERENCE_FILES:
        path = REPO / REFERENCE_DIR / name
        digest.update(path.read_bytes() if path.is_file() else b"-")
    return digest.hexdigest()


def reuse_summary(out: Path, stamp: str, asked: dict) -> list[str] | None:
    """The summary of an earlier run on the same results and the same ``asked`` (the flags
    the analysis and the curriculum read: budget, replicates), or None."""
    path = out / "summary.json"
    if not (path.is_file() and (out / "report.html").is_file()):
        return None
    from doit.io import JsonError, read_json

    try:
        kept = read_json(path)
    except JsonError:  # a cut or edited summary: analyse again
        return None
    same = kept.get("results_sha256") == stamp and all(kept.get(k) == v for k, v in asked.items())
    if not same:
        return None
    here = f"report: {out / 'report.html'}"  # a copied study's, not the one it was copied from
    return [here if line.startswith("report: ") else line for line in kept["lines"]]


def save_summary(out: Path, stamp: str, asked: dict, lines: list[str]) -> None:
    from doit.io import atomic_write_text, write_json

    atomic_write_text(out / "summary.txt", "\n".join(lines) + "\n")
    write_json(out / "summary.json", {"results_sha256": stamp, **asked, "lines": lines})


if __name__ == "__main__":
    sys.exit(main())
