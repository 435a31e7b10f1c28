"""Interval coverage and decision accuracy of `doit analysis fit` on planted worlds (issue #29),
the old engine's numbers beside the current one's, on the same worlds.

    .venv/bin/python bench/coverage.py [--studies N] [--replicates 200] [--before REV | --no-before]
        [--designs a,b,c1,c3] [--keep DIR] [--readme]

For each design of `doit.analysis.synthetic.DESIGNS` (a: the demo's; b: 400 items, 3 bases
spanning x 8, 2 seeds; c1, c3: the study's, 1 and 3 seeds) and training-seed SD 0 and 0.4 (logit),
N planted worlds (`synthetic.planted_world`, rng 0..N-1: the two SDs share levers, items and
draws, only the seed effect differs) are written as study folders and each is analysed by
``fit --replicates R`` in this process (the current engine) and, in one subprocess per row, by
the engine at ``--before`` (default: main when #29 began), checked out with
``git worktree add --detach`` into a temporary folder (both engines see the same folders; they
run side by side, one core each). With one seed and SD 0.4, rows with the prior ``--seed-sd`` at
0.5x, 1x and 2x the planted value are added when this checkout's CLI has that flag (current engine
only). Per row, pooled over worlds and abilities, each share with its Wilson 95% interval:

- ``cover data``, ``cover size``: the 95% interval of data_sensitivity / size_sensitivity holds
  the planted value (an empty interval does not);
- ``false plateau``: group ``saturating`` where the planted curve does not saturate in the grid
  (the ``plateau`` kind saturates at 1.5x the grid's largest n);
- ``true plateau``: group ``saturating`` where it does (data responsive and saturation_n inside
  the grid: the ``saturating`` kind, at 1/8 of the largest n, and any other curve that gets
  there), the detector's power;
- ``data class``, ``size class``: the planted class (responsive / resistant / harmed, margin
  delta) recovered;
- ``wrong calls``: of all ability x axis calls, a planted responsive one called resistant or
  harmed, or a planted resistant or harmed one called responsive;
- ``failed fits``: studies whose ``fit`` failed (each said as it fails), left out of the shares;
- ``s/study``: wall seconds per analysis (both engines under the same load).

``--readme`` writes the table into doit/analysis/README.md (between its coverage-bench
markers). The default N keeps the whole bench within 25 minutes on 2 idle cores (the comment
at `DEFAULT_STUDIES`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from scipy.stats import binomtest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from doit.analysis import synthetic  # noqa: E402
from doit.analysis.cli import build_parser, main  # noqa: E402
from doit.io import atomic_write_text  # noqa: E402

BEFORE = "dd20afd90735f52d809ed293227b8f1a95a4cfe4"  # main when #29 began: the pre-#29 engine
DESIGN_ORDER = ("a", "b", "c1", "c3")
SEED_SDS = (0.0, 0.4)
PRIOR_SCALES = (0.5, 1.0, 2.0)  # the prior --seed-sd, x the planted seed SD (score scale)
# Linear in N: --studies 4 on the #29 engine (0b2738d, 12 rows with the prior rows) took 4.0 CPU
# min in this process (worlds written here too: 60 s a world index) and 1.7 in the old engine's,
# side by side on the other core: 20 x 60 s = 20 min of the 25-minute budget on 2 idle cores
# (doit/analysis/README.md, "Coverage and decision accuracy").
DEFAULT_STUDIES = 20
OLD_CPU: list[float] = []  # CPU seconds of each old-engine subprocess
README = REPO / "doit" / "analysis" / "README.md"
BEGIN, END = "<!-- coverage-bench:begin -->", "<!-- coverage-bench:end -->"


@dataclass(frozen=True)
class Row:
    """One row of the table: a design, a planted seed SD and the prior as a multiple of the
    planted seed SD on the analysis's scale (None: none passed)."""

    design: str
    seed_sd: float
    prior: float | None = None

    @property
    def name(self) -> str:
        prior = "" if self.prior is None else f"-prior{self.prior:g}x"
        return f"{self.design}-sd{self.seed_sd:g}{prior}"

    @property
    def worlds(self) -> str:
        """The folder of its worlds (rows with a prior reuse the worlds without one)."""
        return f"{self.design}-sd{self.seed_sd:g}"

    def flags(self, folder: Path) -> list[str]:
        """``--seed-sd``: the multiple ``prior`` of the world's planted seed SD on the logit of a
        cell's score (the analysis's scale; `planted.csv`'s ``seed_sd_score``, its RMS over the
        abilities): the world's own ``seed_sd`` is on the items' logit, which the item
        difficulty's spread and the floor and ceiling damp at the cell's score."""
        if self.prior is None:
            return []
        planted = pd.read_csv(folder / "planted.csv")["seed_sd_score"]
        return ["--seed-sd", f"{self.prior * float((planted**2).mean() ** 0.5):.4g}"]


def has_seed_sd_flag() -> bool:
    """Whether this checkout's `doit analysis fit` takes --seed-sd."""
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
        build_parser().parse_args(["fit", "--help"])
    return "--seed-sd" in out.getvalue()


def rows_for(designs, prior: bool) -> list[Row]:
    rows = []
    for d in designs:
        for sd in SEED_SDS:
            rows.append(Row(d, sd))
            if prior and sd > 0 and synthetic.DESIGNS[d].seeds == 1:
                rows += [Row(d, sd, scale) for scale in PRIOR_SCALES]
    return rows


def write_worlds(row: Row, studies: int, root: Path) -> list[Path]:
    folders = []
    for i in range(studies):
        folder = root / "worlds" / row.worlds / f"w{i:03d}"
        if not (folder / "planted.csv").is_file():
            synthetic.planted_world(row.design, seed_sd=row.seed_sd, rng=i).write(folder)
        folders.append(folder)
    return folders


def analyse_here(row: Row, folders: list[Path], out: Path, replicates: int) -> float:
    """``fit`` on every folder with this checkout's engine; wall seconds per study. A fit that
    fails is said (its folder and message) and counted by `measure`, not the end of the bench."""
    start = time.perf_counter()
    for folder in folders:
        argv = ["fit", str(folder), "--out", str(out / folder.name), "--overwrite"]
        (out / folder.name / "sensitivity.csv").unlink(missing_ok=True)  # a failure leaves none
        said = io.StringIO()
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            rc = main([*argv, "--replicates", str(replicates), *row.flags(folder)])
        if rc != 0:
            print(
                f"fit failed on {folder} {' '.join(row.flags(folder))} (exit {rc}): {said.getvalue()}"
            )
    return (time.perf_counter() - start) / len(folders)


BEFORE_SCRIPT = """
import contextlib, io, json, sys, time
import doit
from doit.analysis.cli import main
root, jobs, replicates, timing = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
assert doit.__file__.startswith(root), f"the old engine imported {doit.__file__}, not {root}"
start = time.perf_counter()
for folder, out in jobs:
    with contextlib.redirect_stdout(io.StringIO()):
        rc = main(["fit", folder, "--out", out, "--overwrite", "--replicates", replicates])
    if rc != 0:
        print(f"fit failed on {folder} (exit {rc})")
wall = (time.perf_counter() - start) / len(jobs)
open(timing, "w").write(json.dumps({"wall": wall, "cpu": time.process_time()}))
"""


def start_before(tree: Path, folders: list[Path], out: Path, replicates: int):
    """The old engine's ``fit`` on every folder, in one subprocess (started, not awaited)."""
    jobs = [(str(f), str(out / f.name)) for f in folders]
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, "-c", BEFORE_SCRIPT, str(tree), json.dumps(jobs), str(replicates)]
    log = (out / "log.txt").open("w")
    return subprocess.Popen(  # from its tree: ``-c`` puts the current folder first on the path
        [*argv, str(out / "seconds.json")], cwd=tree, env=env, stdout=log, stderr=log
    )


def measure(folders: list[Path], out: Path) -> dict:
    """The counts behind every share of a row, pooled over its worlds and abilities."""
    parts, failed = [], 0
    for folder in folders:
        truth = pd.read_csv(folder / "planted.csv")
        if not (out / folder.name / "sensitivity.csv").is_file():
            failed += 1  # the fit failed (said when it did): left out of every share
            continue
        got = pd.read_csv(out / folder.name / "sensitivity.csv")
        parts.append(truth.merge(got, on="ability", suffixes=("_true", "")))
    m = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=MEASURED)
    counts = {"failed": failed}
    for axis in ("data", "size"):
        true, lo, hi = (
            m[f"{axis}_sensitivity_true"],
            m[f"{axis}_sensitivity_lo"],
            m[f"{axis}_sensitivity_hi"],
        )
        counts[f"cover {axis}"] = (int(((lo <= true) & (true <= hi)).sum()), len(m))
        counts[f"{axis} class"] = (
            int((m[f"{axis}_class_true"] == m[f"{axis}_class"]).sum()),
            len(m),
        )
    saturates = m["saturates"].astype(bool)
    called = m["group"] == "saturating"
    counts["false plateau"] = (int((called & ~saturates).sum()), int((~saturates).sum()))
    counts["true plateau"] = (int((called & saturates).sum()), int(saturates.sum()))
    wrong = sum(int(_wrong(m[f"{a}_class_true"], m[f"{a}_class"]).sum()) for a in ("data", "size"))
    counts["wrong calls"] = (wrong, 2 * len(m))
    return counts


def _wrong(planted: pd.Series, called: pd.Series) -> pd.Series:
    flat = ("resistant", "harmed")
    return ((planted == "responsive") & called.isin(flat)) | (
        planted.isin(flat) & (called == "responsive")
    )


MEASURED = [  # the merged columns `measure` reads (an empty row's)
    f"{axis}_{name}"
    for axis in ("data", "size")
    for name in ("sensitivity_true", "sensitivity_lo", "sensitivity_hi", "class_true", "class")
] + ["saturates", "group"]
COLUMNS = (
    "cover data",
    "cover size",
    "false plateau",
    "true plateau",
    "data class",
    "size class",
    "wrong calls",
)


def share(k: int, n: int) -> str:
    """k / n with its Wilson 95% interval."""
    if n == 0:
        return "-"
    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    return f"{k / n:.2f} [{ci.low:.2f}, {ci.high:.2f}]"


def markdown(results: list[dict]) -> str:
    head = ["design", "seed_sd", "prior", "engine", *COLUMNS, "n", "failed fits", "s/study"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [share(*r["counts"][c]) for c in COLUMNS]
        n = r["counts"]["cover data"][1]
        prior = "-" if r["row"].prior is None else f"{r['row'].prior:g}x"
        lines.append(
            "| "
            + " | ".join(
                [
                    r["row"].design,
                    f"{r['row'].seed_sd:g}",
                    prior,
                    r["engine"],
                    *cells,
                    str(n),
                    str(r["counts"]["failed"]),
                    f"{r['seconds']:.1f}",
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@contextlib.contextmanager
def checkout(rev: str | None, root: Path):
    """``rev`` in a detached temporary worktree (None: no old engine), removed afterwards."""
    if rev is None:
        yield None
        return
    tree = root / "before-engine"
    git("worktree", "add", "--detach", str(tree), rev)
    try:
        yield tree
    finally:
        git("worktree", "remove", "--force", str(tree))


def bench(rows: list[Row], args, root: Path, tree: Path | None) -> list[dict]:
    results = []
    for row in rows:
        folders = write_worlds(row, args.studies, root)
        before = None
        if tree is not None and row.prior is None:
            before = start_before(tree, folders, root / "before" / row.name, args.replicates)
        seconds = analyse_here(row, folders, root / "after" / row.name, args.replicates)
        if before is not None:
            if before.wait() != 0:
                raise SystemExit(f"the old engine failed: {root / 'before' / row.name / 'log.txt'}")
            old = root / "before" / row.name
            took = json.loads((old / "seconds.json").read_text())
            OLD_CPU.append(took["cpu"])
            results.append(
                dict(row=row, engine="before", counts=measure(folders, old), seconds=took["wall"])
            )
        after = dict(row=row, engine="after", seconds=seconds)
        results.append({**after, "counts": measure(folders, root / "after" / row.name)})
        print(markdown(results[-2 if before else -1 :]).split("\n", 2)[-1], flush=True)
    return results


def write_readme(text: str, path: Path = README) -> None:
    """Replace everything between the README's one pair of markers by ``text`` (a rerun
    replaces the table, never adds one; the table once appeared twice there from a paste)."""
    old = path.read_text(encoding="utf-8")
    if old.count(BEGIN) != 1 or old.count(END) != 1 or old.index(BEGIN) > old.index(END):
        raise SystemExit(f"{path}: expected one {BEGIN} ... {END} pair to write the table between")
    head, rest = old.split(BEGIN, 1)
    atomic_write_text(path, f"{head}{BEGIN}\n{text}\n{END}{rest.split(END, 1)[1]}")


def run() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=DEFAULT_STUDIES, help="planted worlds per row")
    p.add_argument("--replicates", type=int, default=200, help="bootstrap replicates per fit")
    p.add_argument("--before", default=BEFORE, help="the old engine's git revision")
    p.add_argument("--no-before", action="store_true", help="the current engine only")
    p.add_argument("--designs", default=",".join(DESIGN_ORDER), help="designs (DESIGNS keys)")
    p.add_argument("--keep", type=Path, help="write the worlds and analyses here")
    p.add_argument("--readme", action="store_true", help="write the table into the README")
    args = p.parse_args()
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    unknown = [d for d in designs if d not in synthetic.DESIGNS]
    if unknown or args.studies < 1:
        p.error(f"--designs: unknown {unknown}" if unknown else "--studies: at least 1")
    root = args.keep or Path(tempfile.mkdtemp(prefix="doit-bench-coverage-"))
    rows = rows_for(designs, has_seed_sd_flag())
    dirty = " (with uncommitted changes)" if git("status", "--porcelain", "-uno") else ""
    after, before = git("rev-parse", "--short", "HEAD") + dirty, None
    if not args.no_before:
        before = git("rev-parse", "--short", args.before)
    start = time.perf_counter()
    with checkout(None if args.no_before else args.before, root) as tree:
        print(markdown([]), flush=True)
        results = bench(rows, args, root, tree)
    took = time.perf_counter() - start
    cpu = (
        f"CPU: {time.process_time() / 60:.1f} min this process, "
        f"{sum(OLD_CPU) / 60:.1f} the old engine's"
    )
    command = f"python bench/coverage.py --studies {args.studies} --replicates {args.replicates}"
    if designs != list(DESIGN_ORDER):
        command += f" --designs {','.join(designs)}"
    if args.no_before:
        command += " --no-before"
    text = "\n".join(
        [
            f"`{command}` (before: {before or 'not run'}; after: {after}); "
            f"{len(rows)} rows x {args.studies} worlds, {took / 60:.1f} min in all ({cpu}).",
            "",
            markdown(results),
        ]
    )
    print(f"\n{text}")
    if args.readme:
        write_readme(text)
        print(f"written into {README}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
