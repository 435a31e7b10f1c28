"""The point fit's speed and optimum (``doit.analysis.fits.fit_point``) against the rule before
it (Nelder-Mead from each start, then L-BFGS-B on numerical gradients), side by side on the
same series: every series ``fit_grid`` fits on planted worlds of designs a, b and c1 (every
planted kind, seed effect 0.4 logit, one bootstrap per world).

Prints each rule's seconds, the ratio, and per form how often and by how much each rule's
optimum falls short of the better of the two (in nats of the binomial log-likelihood).

    .venv/bin/python bench/fit_speed.py [--worlds 6]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import optimize

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from doit.analysis import fits  # noqa: E402
from doit.analysis.bootstrap import bootstrap_counts  # noqa: E402
from doit.analysis.select import select_checkpoints  # noqa: E402
from doit.analysis.synthetic import DESIGNS, planted_world  # noqa: E402


def before(form, t, k, m, floor):
    """The rule before: Nelder-Mead (tight tolerances) from each start, then L-BFGS-B."""
    bounds, found = fits._bounds(form), []
    for start in fits._starts(form, t, k, m, floor):
        best = optimize.minimize(
            lambda th: objective(form, t, k, m, floor, th),
            start,
            method="Nelder-Mead",
            bounds=bounds,
            options={"xatol": 1e-7, "fatol": 1e-9},
        )
        found.append(
            optimize.minimize(
                lambda th: objective(form, t, k, m, floor, th),
                best.x,
                method="L-BFGS-B",
                bounds=bounds,
            )
        )
    return min(found, key=lambda r: r.fun if np.isfinite(r.fun) else np.inf).x


def objective(form, t, k, m, floor, theta) -> float:
    ll = fits.loglik(form, theta, t, k, m, floor.k, floor.m)
    return float(-ll + fits.RIDGE * (theta**2).sum())


def series(worlds: int) -> list[tuple]:
    """Every (form, t, k, m, floor) ``fit_grid`` hands ``fit_point`` on the planted worlds."""
    seen, point = [], fits.fit_point

    def record(form, t, k, m, floor):
        seen.append((form, *(np.asarray(x, float) for x in (t, k, m)), floor))
        return point(form, t, k, m, floor)

    fits.fit_point = record
    try:
        for design in ("a", "b", "c1"):
            for r in range(worlds):
                world = planted_world(DESIGNS[design], seed_sd=0.4, rng=r)
                table = select_checkpoints(world.table, "last")
                fits.fit_grid(bootstrap_counts(table, world.items, 20, r))
    finally:
        fits.fit_point = point
    return seen


def timed(rule, cases) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    found = np.array([objective(*c, rule(*c)) for c in cases])
    return time.perf_counter() - start, found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", type=int, default=6, help="planted worlds per design")
    args = parser.parse_args()
    cases = series(args.worlds)
    old_s, old = timed(before, cases)
    new_s, new = timed(fits.fit_point, cases)
    print(f"{len(cases)} series: before {old_s:.1f} s, now {new_s:.1f} s, {old_s / new_s:.1f}x")
    best = np.minimum(old, new)
    forms = np.array([c[0] for c in cases])
    print("form       series  rule    short>1e-4  short>1e-2  most short (nats)")
    for form in fits.FORMS:
        on = forms == form
        for name, found in (("before", old), ("now", new)):
            gap = (found - best)[on]
            print(
                f"{form:<10} {on.sum():>6}  {name:<7} {(gap > 1e-4).sum():>10}"
                f"  {(gap > 1e-2).sum():>10}  {gap.max(initial=0):.4f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
