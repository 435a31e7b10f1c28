"""The variance model against planted studies (issue #31): predicted standard errors vs the
empirical SD of the estimates, realised power at the planned MDE, and how many abilities a design
is predicted to decide vs how many it decides when run.

    .venv/bin/python bench/power.py [--studies N] [--replicates 100] [--designs a,b,c1] [--readme]

Per design of `doit.analysis.synthetic.DESIGNS` (seed_sd 0.4 logit; one-seed designs analysed
with the prior ``--seed-sd`` at the planted value on the score scale, as the coverage bench's
1x row; design b estimates it from its 2 seeds), with levers drawn once (rng 0) and N worlds
re-drawn around them (items, seed effects, outcomes: rng 1..N):

- **se ratio**: the model's SE (`doit.stats.variance`, inputs measured on a pilot world, rng
  1000, by `doit.stats.pilot`; scores at each point the planted expected ones) over the SD of
  the N worlds' estimates, per ability and axis; the table gives the RMS-pooled ratio
  sqrt(mean pred^2 / mean emp^2) over abilities with a 95% interval from resampling the worlds,
  and the range of the per-ability ratios (each from N estimates: +-1/sqrt(2(N-1)) noise alone);
- **power**: a second world whose ten abilities are smooth, each planted with its data
  sensitivity at the model's planned MDE (two rounds: the MDE moves the scores); the share of
  ability x world calls that are responsive on the data axis, Wilson 95% interval (target 0.80);
- **decided**: per world of the first kind, the abilities whose data axis is decided
  (responsive, resistant or harmed) vs the model's expected count at the pilot's estimates
  (normal approximation: P(lower bound > delta) + P(90% interval inside the margin) + P(upper
  bound < -delta) at se); mean over worlds of (decided - predicted), target within +-1.

The default N keeps it within 20 minutes on 2 idle cores: N = 16 took 5.1 min wall (9.3 CPU
min, numpy on both cores) on 2026-12-07, linear in N, so N = 40 is about 13 min. N = 16 was too
few: an SD from 16 worlds is noisy enough (+-18%) that design a's size ratio read 1.20 there,
and 1.02 against the SD of 120 worlds (the bench prints its wall and CPU time).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.stats import binomtest, norm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from doit.analysis import synthetic as syn  # noqa: E402
from doit.analysis.bootstrap import bootstrap_counts  # noqa: E402
from doit.analysis.fits import fit_grid  # noqa: E402
from doit.analysis.select import select_checkpoints  # noqa: E402
from doit.analysis.sensitivity import sensitivities  # noqa: E402
from doit.io import atomic_write_text  # noqa: E402
from doit.stats import variance as V  # noqa: E402
from doit.stats.pilot import pilot_inputs  # noqa: E402
from doit.stats.power import DELTA, Z_EQUIVALENCE, Z, power  # noqa: E402

DEFAULT_STUDIES = 40  # about 12 min wall on 2 idle cores (the docstring)
SEED_SD = 0.4
PILOT_RNG = 1000
README = REPO / "doit" / "analysis" / "README.md"
BEGIN, END = "<!-- power-bench:begin -->", "<!-- power-bench:end -->"


def analyse(world, replicates: int):
    """(sensitivity table, the seed prior used, the selected rows) of one world."""
    selected = select_checkpoints(world.table, rule="last")
    prior = None
    if world.design.seeds == 1:
        prior = float(np.sqrt(np.mean(world.truth["seed_sd_score"] ** 2)))
    counts = bootstrap_counts(selected, world.items, replicates, seed_sd=prior)
    table, _ = sensitivities(fit_grid(counts))
    return table.set_index("ability"), prior, selected


def model_ses(world, replicates: int) -> tuple[dict, dict, object]:
    """ability -> (data SE, size SE) from a pilot world's measured inputs, the planted
    scores at each point; and the pilot's sensitivity table."""
    table, prior, selected = analyse(world, replicates)
    measured = pilot_inputs(selected, world.items, "pilot", seed_sd=prior)
    d = world.design
    shape = V.Shape(d.bases, d.trained_ns, d.n_items, d.seeds)
    out, inputs = {}, {}
    for a, (i, _) in measured.items():
        scores = {(b, n): world.expected(a, b, n) for b, n in shape.points}
        inputs[a] = replace(i, scores=scores)
        out[a] = (V.data_se(shape, inputs[a]), V.size_se(shape, inputs[a]))
    return out, inputs, table


def p_decided(theta: float, se: float, delta: float = DELTA) -> float:
    """The normal approximation's probability that the data axis is decided."""
    responsive = norm.sf((delta - theta) / se + Z)
    harmed = norm.cdf((-delta - theta) / se - Z)
    half = Z_EQUIVALENCE * se
    resistant = max(
        norm.cdf((delta - half - theta) / se) - norm.cdf((-delta + half - theta) / se), 0
    )
    return float(responsive + harmed + resistant)


def power_levers(world, ses: dict) -> dict:
    """Smooth abilities planted at the model's data MDE (two rounds)."""
    design, rng = world.design, np.random.default_rng(7)
    levers = {}
    for a in ses:
        lev = syn.draw_levers("smooth", syn.CHANCE.get(a, 25.0), design, rng)
        levers[a] = syn._fit_targets(lev, design, power(ses[a][0]).mde, 1.0)
    return levers


def run_design(name: str, studies: int, replicates: int) -> dict:
    design = syn.DESIGNS[name]
    levers = syn.planted_world(design, seed_sd=SEED_SD, rng=0).levers
    pilot = syn.planted_world(design, dict(levers), seed_sd=SEED_SD, rng=PILOT_RNG)
    ses, _, pilot_table = model_ses(pilot, replicates)
    estimates = {a: ([], []) for a in ses}
    decided = []
    predicted = sum(
        p_decided(float(pilot_table.loc[a, "data_sensitivity"]), ses[a][0]) for a in ses
    )
    for r in range(1, studies + 1):
        world = syn.planted_world(design, dict(levers), seed_sd=SEED_SD, rng=r)
        table, _, _ = analyse(world, replicates)
        for a in ses:
            estimates[a][0].append(table.loc[a, "data_sensitivity"])
            estimates[a][1].append(table.loc[a, "size_sensitivity"])
        decided.append(int(table["data_class"].isin(["responsive", "resistant", "harmed"]).sum()))
    # power: smooth abilities planted at the planned MDE (the MDE's scores: one more round)
    plevers = power_levers(pilot, ses)
    ppilot = syn.planted_world(design, dict(plevers), seed_sd=SEED_SD, rng=PILOT_RNG)
    pses, _, _ = model_ses(ppilot, replicates)
    plevers = {
        a: syn._fit_targets(lev, design, power(pses[a][0]).mde, 1.0) for a, lev in plevers.items()
    }
    calls = []
    for r in range(1, studies + 1):
        world = syn.planted_world(design, dict(plevers), seed_sd=SEED_SD, rng=r)
        table, _, _ = analyse(world, replicates)
        calls += list(table["data_class"] == "responsive")
    return dict(
        design=name,
        ses=ses,
        estimates={a: (np.array(d, float), np.array(s, float)) for a, (d, s) in estimates.items()},
        decided=np.array(decided),
        predicted=predicted,
        calls=np.array(calls),
    )


def ratio_row(res: dict, axis: int, rng) -> tuple[float, float, float, float, float]:
    """(pooled ratio, its 95% interval over resampled worlds, min and max per ability)."""
    abilities = list(res["ses"])
    pred = np.array([res["ses"][a][axis] for a in abilities])
    est = np.array([res["estimates"][a][axis] for a in abilities])  # (K, N)
    ok = np.isfinite(pred) & np.isfinite(est).all(1)
    pred, est = pred[ok], est[ok]
    emp = est.std(1, ddof=1)
    pooled = np.sqrt(np.mean(pred**2) / np.mean(emp**2))
    n = est.shape[1]
    boots = []
    for _ in range(1000):
        pick = rng.integers(0, n, n)
        boots.append(np.sqrt(np.mean(pred**2) / np.mean(est[:, pick].std(1, ddof=1) ** 2)))
    lo, hi = np.percentile(boots, [2.5, 97.5])
    per = pred / emp
    return pooled, lo, hi, per.min(), per.max()


def share(k: int, n: int) -> str:
    ci = binomtest(int(k), int(n)).proportion_ci(method="wilson")
    return f"{k / n:.2f} [{ci.low:.2f}, {ci.high:.2f}]"


def table(results: list[dict]) -> str:
    rng = np.random.default_rng(0)
    head = (
        "| design | se ratio data | per ability | se ratio size | per ability | power at MDE "
        "| decided - predicted | predicted | n |"
    )
    lines = [head, "|" + "---|" * 9]
    for res in results:
        d = ratio_row(res, 0, rng)
        s = ratio_row(res, 1, rng)
        gap = res["decided"] - res["predicted"]
        lines.append(
            f"| {res['design']} | {d[0]:.2f} [{d[1]:.2f}, {d[2]:.2f}] | {d[3]:.2f}-{d[4]:.2f} "
            f"| {s[0]:.2f} [{s[1]:.2f}, {s[2]:.2f}] | {s[3]:.2f}-{s[4]:.2f} "
            f"| {share(res['calls'].sum(), len(res['calls']))} "
            f"| {gap.mean():+.2f} (SD {gap.std(ddof=1):.2f}) | {res['predicted']:.1f} "
            f"| {len(res['decided'])} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--studies", type=int, default=DEFAULT_STUDIES)
    p.add_argument("--replicates", type=int, default=100)
    p.add_argument("--designs", default="a,b,c1")
    p.add_argument("--readme", action="store_true", help="write the table into the README")
    a = p.parse_args(argv)
    start, cpu = time.time(), time.process_time()
    results = []
    for name in a.designs.split(","):
        results.append(run_design(name, a.studies, a.replicates))
        print(f"{name}: done at {(time.time() - start) / 60:.1f} min", flush=True)
    text = table(results)
    command = f"python bench/power.py --studies {a.studies} --replicates {a.replicates}"
    summary = (
        f"`{command}`: {a.studies} worlds (and {a.studies} at the MDE) per design, "
        f"{(time.time() - start) / 60:.1f} min wall, {(time.process_time() - cpu) / 60:.1f} CPU min."
    )
    print(summary)
    print(text)
    if a.readme:
        readme = README.read_text()
        block = f"{BEGIN}\n{summary}\n\n{text}\n{END}"
        if BEGIN in readme:
            readme = readme[: readme.index(BEGIN)] + block + readme[readme.index(END) + len(END) :]
        else:
            readme += "\n" + block + "\n"
        atomic_write_text(README, readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())
