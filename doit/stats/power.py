"""The power of a design: the one MDE definition (issue #29), used by the analysis on its
bootstrap standard errors (`doit.analysis.sensitivity`) and by the planner on the standard
errors the variance model expects (`doit.stats.variance`, `doit grid plan`).

Under a normal approximation with standard error se: mde = delta + (z_0.975 + z_0.8) se, the
smallest true effect the design calls responsive (95% lower bound > delta) with 80%
probability; resistance is reachable when the expected 90% half-width z_0.95 se is below delta
(the two one-sided tests at 5% each), else not even a true zero could be called resistant.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.stats import norm

LEVEL = 0.95  # every interval of the analysis is a 95% interval
DELTA = 2.0  # the margin of responsive / resistant / harmed, points (`--delta`)
POWER = 0.8  # the probability with which the MDE is called responsive
EQUIVALENCE_LEVEL = 0.90  # two one-sided tests at 5% each: a 90% interval inside the margin


def z_score(level: float = LEVEL) -> float:
    """The standard normal quantile of a two-sided ``level`` interval (1.96 for 95%)."""
    return float(norm.ppf((1 + level) / 2))


Z = z_score()
POWER_Z = Z + float(norm.ppf(POWER))
Z_EQUIVALENCE = z_score(EQUIVALENCE_LEVEL)


class Power(NamedTuple):
    """What a design can decide about an estimate whose standard error is se."""

    mde: float  # the smallest true effect called responsive (95% lower bound > delta) w.p. 0.8
    resistant_reachable: bool  # the expected 90% half-width is below delta


def power(se, delta: float = DELTA) -> Power:
    """The power of a design with standard error ``se`` (points; a float or an array) at margin
    ``delta``, under a normal approximation: mde = delta + (z_0.975 + z_0.8) se, resistance
    reachable when z_0.95 se < delta. A NaN se (no replicates) gives a NaN mde, not reachable."""
    se = np.asarray(se, float)
    mde, reachable = delta + POWER_Z * se, Z_EQUIVALENCE * se < delta
    if se.ndim == 0:
        return Power(float(mde), bool(reachable))
    return Power(mde, reachable)


def se_for(mde: float, delta: float = DELTA) -> float:
    """The largest standard error whose MDE is at most ``mde`` (the inverse of `power`)."""
    return (mde - delta) / POWER_Z
