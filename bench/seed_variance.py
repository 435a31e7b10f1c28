"""Seed variance in the intervals (issue #29, item 2): the coverage shares the tests in
tests/analysis/test_seed_variance.py assert, each with its exact binomial 95% interval, for
this tree's bootstrap and, with ``--before FILE``, for another bootstrap.py (the engine before:
``git show main~N:doit/analysis/bootstrap.py > /tmp/before.py``), which takes no prior.

    .venv/bin/python bench/seed_variance.py [--studies 40] [--before /tmp/before.py]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from doit.analysis.bootstrap import bootstrap_counts  # noqa: E402
from tests.analysis import test_seed_variance as checks  # noqa: E402


def engine(path: str):
    """``bootstrap_counts`` of the bootstrap module at ``path`` (its prior, if any, ignored)."""
    spec = importlib.util.spec_from_file_location("bootstrap_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return lambda *args, seed_sd=None: module.bootstrap_counts(*args)


def line(name: str, hits) -> str:
    covered, lo, hi = checks.share(hits)
    return f"  {name}: {covered:.3f} [{lo:.3f}, {hi:.3f}] of {len(hits)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=checks.STUDIES)
    parser.add_argument("--before", help="another bootstrap.py to measure beside this tree's")
    args = parser.parse_args()
    engines = {"this tree": bootstrap_counts}
    if args.before:
        engines = {"before": engine(args.before), **engines}
    for name, counts in engines.items():
        start = time.time()
        print(f"{name} ({args.studies} planted studies per check, seed_sd 0.4 logit):")
        print(
            line(
                "1 seed, no prior: data sensitivity covered",
                checks.prior_coverage(counts, None, args.studies),
            )
        )
        if name != "before":
            print(
                line(
                    "1 seed, prior 0.4: data sensitivity covered",
                    checks.prior_coverage(counts, 0.4, args.studies),
                )
            )
        hits, ratio = checks.point_coverage(counts, args.studies)
        print(line("2 seeds: point score covered", hits))
        if ratio:
            estimated = f"{checks.seed_sd_ratio(ratio):.3f}"
            print(f"  2 seeds: estimated / planted seed SD (score scale, rms): {estimated}")
        print(
            line(
                "2 x 2 seeds of one recipe: difference covers 0",
                checks.same_recipe_coverage(counts, args.studies),
            )
        )
        print(f"  {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
